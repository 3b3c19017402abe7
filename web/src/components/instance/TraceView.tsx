// Engine trace: the timeline (oldest first, paged with the API's cursor) and
// the job chain of the instance's traceId, each job with its attempts.
import { Button, Empty, Space, Switch, Table, Tag, Timeline, Typography } from "antd";
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { traceQuery } from "../../api/queries/instances";
import { ErrorAlert } from "../errors";
import { formatJson, formatTime } from "../format";
import { Pager } from "../Pager";
import { formatCount, formatDuration } from "../units";
import { useCursor } from "../useCursor";
import { InterventionEntry, InterventionIcon } from "./InterventionEntry";
import { RunTag } from "./RunTag";
import type { Diagnostics, Execution, Job, Trace, TraceRow } from "../../api/diagnosticsDocument";

// issue 31 item 2: an operator's intervention, set apart by its colour and icon
function interventionItem(row: TraceRow) {
  return { key: row.id, color: "orange", dot: <InterventionIcon />, children: <InterventionEntry row={row} /> };
}

function TraceTimeline({ trace, onlyInterventions }: { trace: Trace; onlyInterventions?: boolean }) {
  const { t } = useTranslation("instance");
  if (!trace.items.length) return <Empty description={onlyInterventions ? t("intervention.none") : undefined} />;
  return (
    <Timeline
      data-testid="trace-timeline"
      items={trace.items.map((row) => row.kind === "intervention" ? interventionItem(row) : ({
        key: row.id,
        color: /failed|error/.test(row.event) ? "red" : row.event.includes("jump") ? "purple" : "blue",
        children: (
          <div data-testid="trace-row">
            <Typography.Text type="secondary">{formatTime(row.createdAt)}</Typography.Text> <Tag>{row.event}</Tag>
            {row.nodeKey && <Typography.Text>{t("trace.node", { node: row.nodeKey })} </Typography.Text>}
            {row.taskId != null && <Typography.Text type="secondary">{t("trace.task", { id: row.taskId })} </Typography.Text>}
            {row.jobId != null && <Typography.Text type="secondary">{t("trace.job", { id: row.jobId })} </Typography.Text>}
            {row.detail != null && Object.keys(row.detail as object).length > 0 && (
              <div style={{ fontSize: 12, fontFamily: "monospace", whiteSpace: "pre-wrap" }}>{JSON.stringify(row.detail)}</div>
            )}
          </div>
        ),
      }))}
    />
  );
}

function Attempts({ executions }: { executions: Execution[] }) {
  const { t } = useTranslation("instance");
  return (
    <Table<Execution>
      size="small"
      rowKey="id"
      pagination={false}
      dataSource={executions}
      columns={[
        { title: t("col.attempt"), dataIndex: "attempt" },
        { title: t("col.status"), dataIndex: "status", render: (v: string) => <RunTag status={v} /> },
        { title: t("col.startedAt"), dataIndex: "startedAt", render: formatTime },
        { title: t("col.duration"), dataIndex: "durationMs", render: (v: number | null) => formatDuration(v) },
        { title: t("col.error"), render: (_: unknown, e: Execution) => (e.error ? `${e.errorCode ?? ""} ${e.error}` : "—") },
      ]}
    />
  );
}

export function JobTable({ jobs, onRetry }: { jobs: Job[]; onRetry?: (job: Job) => void }) {
  const { t } = useTranslation("instance");
  return (
    <Table<Job>
      size="small"
      rowKey="id"
      data-testid="job-chain"
      pagination={jobs.length > 20 ? { pageSize: 20 } : false}
      dataSource={jobs}
      expandable={{ expandedRowRender: (j) => <Attempts executions={j.executions} />, rowExpandable: (j) => j.executions.length > 0 }}
      columns={[
        { title: t("col.job"), dataIndex: "id" },
        { title: t("col.type"), dataIndex: "type" },
        { title: t("col.status"), dataIndex: "status", render: (v: string) => <RunTag status={v} /> },
        { title: t("col.node"), dataIndex: "nodeKey", render: (v: string | null) => v ?? "—" },
        { title: t("col.attempts"), render: (_: unknown, j: Job) => `${j.attempts}/${j.maxAttempts}` },
        { title: t("col.runAt"), dataIndex: "runAt", render: formatTime },
        { title: t("col.error"), dataIndex: "lastError", render: (v: string | null) => formatJson(v), ellipsis: true },
        ...(onRetry
          ? [
              {
                title: "",
                render: (_: unknown, j: Job) =>
                  ["failed", "dead", "canceled"].includes(j.status) ? (
                    <Button size="small" onClick={() => onRetry(j)} data-testid={`job-retry-${j.id}`}>
                      {t("repair.job_retry")}
                    </Button>
                  ) : null,
              },
            ]
          : []),
      ]}
    />
  );
}

export function TraceView({ doc, onRetry }: { doc: Diagnostics; onRetry: (job: Job) => void }) {
  const { t } = useTranslation("instance");
  const id = doc.instance.id;
  const [onlyInterventions, setOnlyInterventions] = useState(false);
  const kind = onlyInterventions ? ("intervention" as const) : undefined;
  const pager = useCursor(`${id}:${kind ?? "all"}`);
  const page = useQuery({
    ...traceQuery(id, pager.cursor, kind),
    enabled: pager.cursor !== null || kind !== undefined,
  });
  const trace = pager.cursor === null && kind === undefined ? doc.trace : page.data;
  return (
    <div data-testid="view-trace">
      <Typography.Title level={5}>{t("trace.timeline", { total: formatCount(doc.trace.total) })}</Typography.Title>
      <Space style={{ marginBottom: 12 }}>
        <Switch
          size="small"
          checked={onlyInterventions}
          onChange={setOnlyInterventions}
          aria-label={t("intervention.only")}
          data-testid="interventions-only"
        />
        <Typography.Text>{t("intervention.only")}</Typography.Text>
      </Space>
      <ErrorAlert error={page.error} />
      {trace && <TraceTimeline trace={trace} onlyInterventions={onlyInterventions} />}
      <Pager page={pager.page} hasPrevious={pager.hasPrevious} nextCursor={trace?.next} onPrevious={pager.previous} onNext={() => pager.next(trace?.next)} />
      <Typography.Title level={5} style={{ marginTop: 16 }}>
        {t("trace.jobChain", { traceId: doc.trace.jobChain.traceId ?? "—" })}
      </Typography.Title>
      <JobTable jobs={doc.trace.jobChain.jobs} onRetry={onRetry} />
      {doc.trace.jobChain.truncated && <Typography.Text type="warning">{t("trace.truncated")}</Typography.Text>}
    </div>
  );
}
