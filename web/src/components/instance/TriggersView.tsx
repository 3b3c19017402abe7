// Triggers and external dispatches: each job with its payload and every
// attempt's request, response and error (secrets already redacted).
import { Button, Card, Collapse, Descriptions, Empty, Space, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { formatTime } from "../format";
import { JsonBlock } from "../JsonBlock";
import { RunTag } from "./RunTag";
import type { Diagnostics, Job } from "../../api/diagnosticsDocument";

export function TriggersView({ doc, onRetry }: { doc: Diagnostics; onRetry: (job: Job) => void }) {
  const { t } = useTranslation("instance");
  if (!doc.triggers.length) return <Empty data-testid="view-triggers" description={t("triggers.none")} />;
  return (
    <Space direction="vertical" style={{ width: "100%" }} data-testid="view-triggers">
      {doc.triggers.map((j) => (
        <Card
          key={j.id}
          size="small"
          data-testid={`trigger-job-${j.id}`}
          title={
            <Space>
              {t("triggers.job", { id: j.id, type: j.type, node: j.nodeKey ?? "—" })}
              <RunTag status={j.status} />
            </Space>
          }
          extra={
            ["failed", "dead"].includes(j.status) && (
              <Button size="small" onClick={() => onRetry(j)}>
                {t("repair.job_retry")}
              </Button>
            )
          }
        >
          <JsonBlock value={j.payload} />
          <Collapse
            style={{ marginTop: 8 }}
            items={j.executions.map((e) => ({
              key: String(e.id),
              label: (
                <Space>
                  {t("triggers.attempt", { attempt: e.attempt })}
                  <RunTag status={e.status} />
                  <Typography.Text type="secondary">{formatTime(e.startedAt)}</Typography.Text>
                </Space>
              ),
              children: (
                <Descriptions size="small" column={1} bordered>
                  <Descriptions.Item label={t("triggers.request")}>
                    <JsonBlock value={e.request} />
                  </Descriptions.Item>
                  <Descriptions.Item label={t("triggers.response")}>
                    <JsonBlock value={e.response} />
                  </Descriptions.Item>
                  <Descriptions.Item label={t("col.error")}>{e.error ? `${e.errorCode ?? ""} ${e.error}` : "—"}</Descriptions.Item>
                </Descriptions>
              ),
            }))}
          />
        </Card>
      ))}
    </Space>
  );
}
