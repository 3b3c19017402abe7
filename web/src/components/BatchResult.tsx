// The one way the console shows a batch's dry run or result (issue 29
// item 4): a summary alert, the recorded batch's id and counts in the shared
// vocabulary (done / skipped / failed, GET /engine/batches/{batchId}), and a
// table of its items whose outcome column is a ResultTag — coloured by the
// item's shared `result`, labelled with the page's own word (advanced,
// suspended, submitted …) and marked `data-outcome` / `data-result` for
// tests. Used by batch recovery, suspend/resume by definition, targeted
// recovery and the job batch actions.
//
// A dry run whose answer is the selection's `{count, sample, truncated}`
// (suspend/resume by definition) is drawn by BatchPreview: what a run would
// do, the first ids, the truncated mark, the items skipped by status or
// reason and, for a batch that takes a `rate`, how long a run at it takes
// (BatchEstimate, from the API's `estimatedCompletion`). A dry run that is a
// per-item plan (batch recovery, targeted recovery, the replay's job
// samples) stays a BatchResult table; batch recovery adds BatchEstimate.
import { Fragment, type ReactNode } from "react";
import { Alert, Space, Table, Tag, Typography } from "antd";
import type { ColumnType } from "antd/es/table";
import { useTranslation } from "react-i18next";
import { formatCount, formatDuration, formatRate } from "./units";

export type ItemResult = "done" | "skipped" | "failed";
export interface BatchCounts {
  total: number;
  done: number;
  skipped: number;
  failed: number;
}

const RESULT_COLOR: Record<ItemResult, string> = { done: "success", skipped: "default", failed: "error" };

/** An item's outcome: coloured by its shared result, labelled with the page's word. */
export function ResultTag(props: { result: ItemResult; outcome: string; label: ReactNode }) {
  return (
    <Tag color={RESULT_COLOR[props.result]} data-outcome={props.outcome} data-result={props.result}>
      {props.label}
    </Tag>
  );
}

/** The outcome column of a batch table. */
export function resultColumn<T>(title: ReactNode, outcome: (row: T) => { result: ItemResult; outcome: string; label: ReactNode }): ColumnType<T> {
  return {
    title,
    key: "result",
    render: (_: unknown, row: T) => {
      const o = outcome(row);
      return <ResultTag result={o.result} outcome={o.outcome} label={o.label} />;
    },
  };
}

/** The recorded batch's id and its counts, in the shared words. */
export function BatchCountsLine(props: { batchId?: string | null; counts?: BatchCounts | null; dryRun?: boolean }) {
  const { t } = useTranslation("common");
  if (!props.counts) return null;
  const c = props.counts;
  return (
    <Space wrap size={4} data-testid="batch-counts" style={{ marginBottom: 8 }}>
      {props.batchId ? (
        <Typography.Text type="secondary" data-testid="batch-id">
          {t(props.dryRun ? "batch.dryRunId" : "batch.id", { id: props.batchId })}
        </Typography.Text>
      ) : null}
      <Tag>{t("batch.total", { n: formatCount(c.total) })}</Tag>
      <Tag color={RESULT_COLOR.done}>{t("batch.done", { n: formatCount(c.done) })}</Tag>
      <Tag color={RESULT_COLOR.skipped}>{t("batch.skipped", { n: formatCount(c.skipped) })}</Tag>
      <Tag color={c.failed ? RESULT_COLOR.failed : undefined}>{t("batch.failed", { n: formatCount(c.failed) })}</Tag>
    </Space>
  );
}

export interface BatchResultProps<T> {
  /** The summary's test id (the table's is `tableTestId`). */
  testId?: string;
  tableTestId?: string;
  type?: "success" | "info" | "warning" | "error";
  /** The summary alert's text; none: no alert (the page says it already). */
  message?: ReactNode;
  description?: ReactNode;
  batchId?: string | null;
  counts?: BatchCounts | null;
  dryRun?: boolean;
  rows: T[];
  rowKey: string | ((row: T) => string);
  columns: ColumnType<T>[];
  pageSize?: number;
  footer?: ReactNode;
}

/** A batch's summary, counts and item table. */
export function BatchResult<T extends object>(props: BatchResultProps<T>) {
  return (
    <>
      {props.message ? (
        <Alert type={props.type ?? "info"} showIcon data-testid={props.testId} message={props.message} description={props.description} style={{ marginBottom: 8 }} />
      ) : null}
      <BatchCountsLine batchId={props.batchId} counts={props.counts} dryRun={props.dryRun} />
      <Table<T>
        size="small"
        rowKey={props.rowKey}
        data-testid={props.tableTestId}
        pagination={{ pageSize: props.pageSize ?? 10, hideOnSinglePage: true }}
        dataSource={props.rows}
        columns={props.columns}
        footer={props.footer ? () => props.footer : undefined}
      />
    </>
  );
}

export interface CompletionWindow {
  from: string;
  to: string;
}

/** How long a run at `rate` takes (the API's `estimatedCompletion`), or that
 * a run without a rate acts on every item at once. */
export function BatchEstimate(props: { rate?: number | null; estimatedCompletion?: CompletionWindow | null }) {
  const { t } = useTranslation("common");
  const w = props.estimatedCompletion;
  if (!props.rate || !w) {
    return (
      <Typography.Text type="secondary" data-testid="batch-estimate" data-rate="">
        {t("batch.atOnce")}
      </Typography.Text>
    );
  }
  const ms = Math.max(0, Date.parse(w.to) - Date.parse(w.from));
  return (
    <span data-testid="batch-estimate" data-rate={props.rate}>
      {t("batch.estimate", { rate: formatRate(props.rate), duration: formatDuration(ms) })}
    </span>
  );
}

export interface BatchPreviewProps {
  /** The alert's test id. */
  testId?: string;
  /** What a run would do ("3 running instances would be suspended"). */
  message: ReactNode;
  count: number;
  sample: (number | string)[];
  truncated?: boolean;
  /** The most a run takes (the truncated mark says so). */
  max?: number;
  /** A sampled key as shown (default: a tag "#id"). */
  renderKey?: (key: number | string) => ReactNode;
  /** The selection's items a run skips, each reason (a status …) worded, with its count. */
  skipped?: { label: string; n: number }[];
  /** The batch takes a rate: say how long a run takes at it (or that it acts at once). */
  paced?: boolean;
  rate?: number | null;
  estimatedCompletion?: CompletionWindow | null;
}

/** A dry run of the selection's shape: count, first ids, truncated mark, skipped line, estimate. */
export function BatchPreview(props: BatchPreviewProps) {
  const { t } = useTranslation("common");
  const skipped = (props.skipped ?? []).filter((s) => s.n > 0);
  const shown = props.renderKey ?? ((k: number | string) => <Tag>#{k}</Tag>);
  return (
    <Alert
      style={{ marginBottom: 12 }}
      type={props.count ? "warning" : "info"}
      showIcon
      data-testid={props.testId}
      data-count={props.count}
      message={props.message}
      description={
        props.sample.length || skipped.length || props.paced ? (
          <Space direction="vertical" size={4}>
            {props.sample.length > 0 && (
              <span data-testid="batch-preview-sample">
                {t("batch.sample")} {props.sample.map((k) => <Fragment key={k}>{shown(k)}</Fragment>)}
                {props.count > props.sample.length ? "… " : null}
                {props.truncated ? (
                  <Typography.Text type="secondary" data-testid="batch-preview-truncated">
                    {t("batch.truncated", { max: formatCount(props.max ?? 500) })}
                  </Typography.Text>
                ) : null}
              </span>
            )}
            {skipped.length > 0 && (
              <span data-testid="batch-preview-skipped">
                {t("batch.skippedBy")} {skipped.map((s) => `${s.label} ${formatCount(s.n)}`).join(t("batch.sep"))}
              </span>
            )}
            {props.paced ? <BatchEstimate rate={props.rate} estimatedCompletion={props.estimatedCompletion} /> : null}
          </Space>
        ) : undefined
      }
    />
  );
}
