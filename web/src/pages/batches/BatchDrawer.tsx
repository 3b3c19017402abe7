// One recorded batch (?batch=<id>): what it is (state, kind, actor, reason,
// times, the request), its progress — read again every 2 s while it runs
// (batchQuery) — the error when the batch itself broke, and its items
// through the shared BatchResult: each item's key (a job, an instance, a
// retention policy's table), its result and the reason or error.
import { Alert, Descriptions, Drawer, Progress, Space, Typography } from "antd";
import type { ColumnType } from "antd/es/table";
import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router-dom";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { batchQuery } from "../../api/queries/batches";
import { BatchCountsLine, BatchResult, resultColumn } from "../../components/BatchResult";
import { ErrorAlert } from "../../components/errors";
import { formatTime } from "../../components/format";
import { InstanceLink } from "../../components/InstanceLink";
import { JsonBlock } from "../../components/JsonBlock";
import { formatCount, formatDuration } from "../../components/units";
import { elapsedMs, itemTarget, jobLedgerHref, shortId, stampsJobs, type ItemTarget } from "./kinds";
import { CopyId, KindLabel, StateTag } from "./labels";

type Item = Schemas["BatchItemPublic"];

/** An item's key: a link to its job or instance, unless the batch found none. */
function ItemKey({ target, value, missing }: { target: ItemTarget; value: number | string; missing: boolean }) {
  if (typeof value === "number" && missing) return <>#{value}</>;
  if (typeof value === "number" && target === "instance") return <InstanceLink id={value} />;
  if (typeof value === "number" && target === "job") {
    return (
      <Link to={`/monitor/jobs?job=${value}`} data-testid={`batch-item-job-${value}`}>
        #{value}
      </Link>
    );
  }
  return <Typography.Text code>{String(value)}</Typography.Text>;
}

function ItemWhy({ item }: { item: Item }) {
  if (item.error) {
    const { code, message } = item.error;
    return (
      <Typography.Text type="danger">
        {message ?? ""}
        {code ? <Typography.Text type="secondary">{` (${code})`}</Typography.Text> : null}
      </Typography.Text>
    );
  }
  if (!item.reason) return <>—</>;
  return (
    <span>
      {item.reason}
      {item.code ? <Typography.Text type="secondary">{` (${item.code})`}</Typography.Text> : null}
    </span>
  );
}

export function BatchDrawer({ id, onClose }: { id: string; onClose: () => void }) {
  const { t } = useTranslation("batches");
  const detail = useQuery(batchQuery(id));
  const title = t("detail.title", { id: shortId(id) });
  const d = detail.data;
  const target = d ? itemTarget(d.kind) : "item";
  const running = d?.state === "running";
  // the job batches stamp one instant: no measured duration
  const duration = d ? elapsedMs(d.startedAt, d.finishedAt) : 0;
  const runningText = d ? t("detail.running", { processed: formatCount(d.processed), total: formatCount(d.counts.total) }) : "";
  const percent = d && d.counts.total > 0 ? Math.round((100 * d.processed) / d.counts.total) : 100;

  const columns: ColumnType<Item>[] = [
    { title: t(`item.${target}`), key: "key", render: (_: unknown, r: Item) => <ItemKey target={target} value={r.key} missing={r.code === "not_found"} /> },
    resultColumn<Item>(t("item.result"), (r) => ({ result: r.result, outcome: r.result, label: t(`result.${r.result}`) })),
    { title: t("item.why"), key: "why", render: (_: unknown, r: Item) => <ItemWhy item={r} /> },
  ];

  return (
    <Drawer open onClose={onClose} width={900} title={title} aria-label={title} data-testid="batch-drawer">
      {detail.error ? <ErrorAlert error={detail.error} /> : null}
      {d && (
        <Space direction="vertical" style={{ width: "100%" }} size="middle">
          <Descriptions size="small" column={2} bordered>
            <Descriptions.Item label={t("detail.id")} span={2}>
              <Space size={4}>
                <Typography.Text style={{ fontFamily: "monospace" }} data-testid="batch-detail-id">
                  {d.id}
                </Typography.Text>
                <CopyId id={d.id} />
              </Space>
            </Descriptions.Item>
            <Descriptions.Item label={t("detail.state")}>
              <span data-testid="batch-detail-state">
                <StateTag state={d.state} />
              </span>
            </Descriptions.Item>
            <Descriptions.Item label={t("detail.kind")}>
              <span data-testid="batch-detail-kind">
                <KindLabel kind={d.kind} dryRun={d.dryRun} />
              </span>
            </Descriptions.Item>
            <Descriptions.Item label={t("detail.actor")}>{d.actor}</Descriptions.Item>
            <Descriptions.Item label={t("detail.reason")}>
              <span data-testid="batch-detail-reason">{d.reason ?? "—"}</span>
            </Descriptions.Item>
            <Descriptions.Item label={t("detail.startedAt")}>{formatTime(d.startedAt)}</Descriptions.Item>
            <Descriptions.Item label={running ? t("detail.updatedAt") : t("detail.finishedAt")}>
              {formatTime(running ? d.updatedAt : d.finishedAt)}
            </Descriptions.Item>
            <Descriptions.Item label={t("detail.duration")}>{duration > 0 ? formatDuration(duration) : "—"}</Descriptions.Item>
            <Descriptions.Item label={t("detail.progress")}>
              <div data-testid="batch-detail-progress" style={{ minWidth: 160 }}>
                <Progress
                  aria-label={t("detail.progress")}
                  size="small"
                  percent={percent}
                  status={d.state === "failed" || d.counts.failed > 0 ? "exception" : running ? "active" : "success"}
                  format={() => t("detail.processed", { processed: formatCount(d.processed), total: formatCount(d.counts.total) })}
                />
              </div>
            </Descriptions.Item>
            <Descriptions.Item label={t("detail.request")} span={2}>
              <JsonBlock value={d.request} testId="batch-detail-request" />
            </Descriptions.Item>
          </Descriptions>
          {d.state === "failed" ? (
            <Alert type="error" showIcon data-testid="batch-detail-error" message={t("detail.error")} description={d.error ?? undefined} />
          ) : null}
          {stampsJobs(d.kind) ? (
            <Link to={jobLedgerHref(d.id)} data-testid="batch-detail-jobs">
              {t("detail.jobLedger")}
            </Link>
          ) : null}
          <div>
            <Typography.Title level={5} style={{ marginTop: 0 }}>
              {t("detail.items")}
            </Typography.Title>
{running && d.results.length === 0 ? (
              // the items' results are written when the batch finishes: its counts until then
              <>
                <Alert type="info" showIcon data-testid="batch-detail-running" message={runningText} style={{ marginBottom: 8 }} />
                <BatchCountsLine batchId={d.id} counts={d.counts} dryRun={d.dryRun} />
              </>
            ) : (
              <BatchResult<Item>
                testId="batch-detail-running"
                tableTestId="batch-items"
                type="info"
                message={running ? runningText : undefined}
                batchId={d.id}
                counts={d.counts}
                dryRun={d.dryRun}
                rows={d.results}
                rowKey={(r) => String(r.key)}
                columns={columns}
                pageSize={20}
              />
            )}
          </div>
        </Space>
      )}
    </Drawer>
  );
}
