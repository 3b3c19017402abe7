// One job: its fields, every attempt of every generation (request, response,
// error, timings), its trace chain and the diagnostic-bundle download, with
// retry / skip.
import { Button, Collapse, Descriptions, Drawer, Empty, Space, Table, Tabs, Tag, Typography } from "antd";
import { useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { download, type Schemas } from "../../api/client";
import { ErrorAlert, useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { formatDuration } from "../../components/units";
import { InstanceLink } from "../../components/InstanceLink";
import { JsonBlock } from "../../components/JsonBlock";
import { StatusTag } from "../../components/StatusTag";
import { JobActionButtons } from "./JobActions";
import { ActionLink } from "../../components/ActionLink";
import { jobChainQuery, jobQuery } from "../../api/queries/jobs";

type Execution = Schemas["JobExecutionPublic"];

function Attempts({ executions }: { executions: Execution[] }) {
  const { t } = useTranslation("jobs");
  if (!executions.length) return <Empty description={t("detail.noAttempts")} />;
  const generations = [...new Set(executions.map((e) => e.generation))].sort((a, b) => b - a);
  return (
    <Collapse
      data-testid="job-generations"
      defaultActiveKey={generations.map(String)}
      items={generations.map((g) => ({
        key: String(g),
        label: t("detail.generation", { generation: g }),
        children: executions
          .filter((e) => e.generation === g)
          .sort((a, b) => a.attempt - b.attempt)
          .map((e) => (
            <div key={e.id} data-testid="job-attempt" style={{ borderBottom: "1px solid rgba(128, 128, 128, 0.25)", paddingBottom: 8, marginBottom: 8 }}>
              <Space style={{ marginBottom: 8 }}>
                <Typography.Text strong>{t("detail.attempt", { attempt: e.attempt })}</Typography.Text>
                <StatusTag status={e.status} />
                {e.errorCode && <Tag>{e.errorCode}</Tag>}
              </Space>
              <Descriptions size="small" column={2} bordered>
                <Descriptions.Item label={t("detail.scheduledAt")}>{formatTime(e.scheduledAt)}</Descriptions.Item>
                <Descriptions.Item label={t("detail.startedAt")}>{formatTime(e.startedAt)}</Descriptions.Item>
                <Descriptions.Item label={t("detail.finishedAt")}>{formatTime(e.finishedAt)}</Descriptions.Item>
                <Descriptions.Item label={t("detail.duration")}>
                  {formatDuration(e.durationMs)} · {t("detail.queueDelay", { delay: formatDuration(e.queueDelayMs) })}
                </Descriptions.Item>
                <Descriptions.Item label={t("detail.node")}>{e.nodeId ?? "—"}</Descriptions.Item>
                <Descriptions.Item label={t("detail.sideEffectAt")}>{formatTime(e.sideEffectAt)}</Descriptions.Item>
                <Descriptions.Item label={t("detail.error")} span={2}>
                  {e.error ?? "—"}
                </Descriptions.Item>
                <Descriptions.Item label={t("detail.request")} span={2}>
                  <JsonBlock value={e.request} testId="attempt-request" />
                </Descriptions.Item>
                <Descriptions.Item label={t("detail.response")} span={2}>
                  <JsonBlock value={e.response} testId="attempt-response" />
                </Descriptions.Item>
              </Descriptions>
            </div>
          )),
      }))}
    />
  );
}

function TraceChain({ traceId, onOpen }: { traceId: string; onOpen: (id: number) => void }) {
  const { t } = useTranslation("jobs");
  const showError = useShowError();
  const chain = useQuery(jobChainQuery(traceId));
  return (
    <Space direction="vertical" style={{ width: "100%" }}>
      <Space>
        <Typography.Text copyable>{traceId}</Typography.Text>
        <Button
          data-testid="download-bundle"
          onClick={() =>
            download(`/api/workflows/engine/jobs/chain/${encodeURIComponent(traceId)}/diagnostic-bundle`, `diagnostic-${traceId}.json`).catch(showError)
          }
        >
          {t("detail.downloadBundle")}
        </Button>
      </Space>
      {chain.error ? <ErrorAlert error={chain.error} /> : null}
      {chain.data?.truncated && <Typography.Text type="warning">{t("detail.chainTruncated")}</Typography.Text>}
      <Table
        data-testid="trace-chain"
        size="small"
        rowKey="id"
        loading={chain.isLoading}
        pagination={false}
        dataSource={chain.data?.jobs ?? []}
        columns={[
          { title: t("col.id"), dataIndex: "id", render: (id: number) => <ActionLink onClick={() => onOpen(id)}>#{id}</ActionLink> },
          { title: t("col.type"), dataIndex: "type" },
          { title: t("col.node"), dataIndex: "nodeKey", render: (v: string | null) => v ?? "—" },
          { title: t("col.status"), dataIndex: "status", render: (s: string) => <StatusTag status={s} /> },
          { title: t("col.attempts"), render: (_, j) => `${j.attempts} / ${j.maxAttempts}` },
          { title: t("col.createdAt"), dataIndex: "createdAt", render: formatTime },
        ]}
      />
    </Space>
  );
}

export function JobDetailDrawer({ jobId, onClose, onOpen }: { jobId: number | null; onClose: () => void; onOpen: (id: number) => void }) {
  const { t } = useTranslation("jobs");
  const job = useQuery({
    ...jobQuery(jobId ?? 0),
    enabled: jobId !== null,
  });
  const j = job.data;
  return (
    <Drawer open={jobId !== null} onClose={onClose} width={880} title={t("detail.title", { id: jobId })} destroyOnClose data-testid="job-drawer"
      extra={j && <JobActionButtons job={j} />}>
      {job.error ? <ErrorAlert error={job.error} /> : null}
      {j && (
        <Tabs
          items={[
            {
              key: "overview",
              label: t("detail.overview"),
              children: (
                <Space direction="vertical" style={{ width: "100%" }}>
                  <Descriptions size="small" column={2} bordered>
                    <Descriptions.Item label={t("col.type")}>{j.type}</Descriptions.Item>
                    <Descriptions.Item label={t("col.status")}><span data-testid="job-status"><StatusTag status={j.status} /></span></Descriptions.Item>
                    <Descriptions.Item label={t("col.instance")}><InstanceLink id={j.instanceId} /></Descriptions.Item>
                    <Descriptions.Item label={t("col.node")}>{j.nodeKey ?? "—"}</Descriptions.Item>
                    <Descriptions.Item label={t("col.attempts")}>{`${j.attempts} / ${j.maxAttempts}`}</Descriptions.Item>
                    <Descriptions.Item label={t("detail.generationLabel")}>{j.generation}</Descriptions.Item>
                    <Descriptions.Item label={t("detail.pool")}>{j.pool}</Descriptions.Item>
                    <Descriptions.Item label={t("col.runAt")}>{formatTime(j.runAt)}</Descriptions.Item>
                    <Descriptions.Item label={t("col.createdAt")}>{formatTime(j.createdAt)}</Descriptions.Item>
                    <Descriptions.Item label={t("col.updatedAt")}>{formatTime(j.updatedAt)}</Descriptions.Item>
                    <Descriptions.Item label={t("detail.lease")}>{j.leaseOwner ? `${j.leaseOwner} · ${formatTime(j.leaseUntil)}` : "—"}</Descriptions.Item>
                    <Descriptions.Item label={t("detail.replayBatch")}>{j.replayBatchId ?? "—"}</Descriptions.Item>
                    <Descriptions.Item label={t("detail.lastError")} span={2}>
                      {j.lastError ? `${j.lastErrorCode ?? ""} ${j.lastError}` : "—"}
                    </Descriptions.Item>
                    <Descriptions.Item label={t("detail.cancelReason")} span={2}>{j.cancelReason ?? "—"}</Descriptions.Item>
                    <Descriptions.Item label={t("detail.payload")} span={2}><JsonBlock value={j.payload} /></Descriptions.Item>
                    <Descriptions.Item label={t("detail.result")} span={2}><JsonBlock value={j.result} /></Descriptions.Item>
                  </Descriptions>
                </Space>
              ),
            },
            { key: "attempts", label: <span data-testid="tab-attempts">{t("detail.attempts", { count: j.executions.length })}</span>, children: <Attempts executions={j.executions} /> },
            { key: "chain", label: <span data-testid="tab-chain">{t("detail.chain")}</span>, children: <TraceChain traceId={j.traceId} onOpen={onOpen} /> },
          ]}
        />
      )}
    </Drawer>
  );
}
