// O-14 totals: instances per status, average duration of the finished ones,
// pending human tasks now and starts in the last 7 days.
import { Col, Row, Space, Statistic, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { formatCount, formatDuration } from "../../components/units";
import { StatusTag } from "../../components/StatusTag";
import { PanelCard } from "./PanelCard";
import { approx } from "./approx";
import { usePanel } from "./useAnalytics";

export function TotalsPanel({ definitionKey }: { definitionKey?: string }) {
  const { t } = useTranslation("analytics");
  const q = usePanel("totals", definitionKey);
  const d = q.data;
  // estimates (issue 34 item 3): figures named in `estimated`, statuses in `estimatedStatuses`, read "≈ n"
  const rough = d?.estimated;
  const roughStatuses = d?.estimatedStatuses;
  const figures = d
    ? [
        { key: "instances", value: approx(rough, "instances", formatCount(d.instances)) },
        { key: "finished", value: approx(rough, "finished", formatCount(d.finished)) },
        { key: "avgDuration", value: approx(rough, "avgDurationMs", formatDuration(d.avgDurationMs)) },
        { key: "pendingTasks", value: formatCount(d.pendingTasks) },
        { key: "startsLast7Days", value: formatCount(d.startsLast7Days) },
      ]
    : [];
  return (
    <PanelCard title={t("totals.title")} testId="panel-totals" loading={q.isLoading} error={q.error}>
      <Row gutter={16}>
        {figures.map((f) => (
          <Col key={f.key} xs={12} md={8} xl={4}>
            <Statistic title={t(`totals.${f.key}`)} value={f.value} valueRender={() => <span data-testid={`totals-${f.key}`}>{f.value}</span>} />
          </Col>
        ))}
      </Row>
      <Space wrap style={{ marginTop: 12 }} data-testid="totals-by-status">
        <Typography.Text type="secondary">{t("totals.byStatus")}</Typography.Text>
        {Object.entries(d?.instancesByStatus ?? {}).map(([status, n]) => (
          <span key={status} data-testid={`totals-status-${status}`}>
            <StatusTag status={status} />
            {approx(roughStatuses, status, formatCount(n))}
          </span>
        ))}
      </Space>
    </PanelCard>
  );
}
