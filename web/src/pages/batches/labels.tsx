// The words and tags the batch list and its drawer share: a kind's name, the
// batch state's tag, the short id with its copy button, when it finished.
import { Space, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { formatTime } from "../../components/format";
import { formatDuration } from "../../components/units";
import { elapsedMs } from "./kinds";

export type BatchState = "running" | "completed" | "failed";

const STATE_COLOR: Record<BatchState, string> = { running: "processing", completed: "success", failed: "error" };

/** A kind's name in the active language; an unknown kind as the API says it. */
export function useKindLabel(): (kind: string) => string {
  const { t, i18n } = useTranslation("batches");
  return (kind) => (i18n.exists(`batches:kind.${kind}`) ? t(`kind.${kind}`) : kind);
}

export function KindLabel({ kind, dryRun }: { kind: string; dryRun: boolean }) {
  const { t } = useTranslation("batches");
  const label = useKindLabel();
  return (
    <Space size={4} wrap>
      <span data-kind={kind}>{label(kind)}</span>
      {dryRun ? <Tag data-testid="batch-dry-run">{t("dryRun")}</Tag> : null}
    </Space>
  );
}

export function StateTag({ state }: { state: BatchState }) {
  const { t } = useTranslation("batches");
  return (
    <Tag color={STATE_COLOR[state]} data-state={state} style={{ marginInlineEnd: 0 }}>
      {t(`state.${state}`)}
    </Tag>
  );
}

/** The copy button of a batch id (the whole id, whatever is shown). */
export function CopyId({ id }: { id: string }) {
  const { t } = useTranslation("batches");
  return (
    // a click on it copies only: the row's click opens the drawer
    <span onClick={(e) => e.stopPropagation()}>
      <Typography.Text copyable={{ text: id, tooltips: [t("copy"), t("copied")] }} data-testid="batch-copy" />
    </span>
  );
}

/** When a batch finished (the time only on the day it started: the start
 * column has the date) and how long it took; while running, for how long.
 * A batch whose recorder stamps one instant (the job batches) took no
 * measured time: no duration then. */
export function Finished({ state, startedAt, finishedAt }: { state: BatchState; startedAt: string; finishedAt: string | null }) {
  const { t } = useTranslation("batches");
  const ms = elapsedMs(startedAt, finishedAt);
  if (!finishedAt || state === "running") {
    return <Typography.Text type="secondary">{t("runningFor", { duration: formatDuration(ms) })}</Typography.Text>;
  }
  const full = formatTime(finishedAt);
  const sameDay = full.slice(0, 10) === formatTime(startedAt).slice(0, 10);
  return (
    <div>
      <Typography.Text title={full}>{sameDay ? full.slice(11) : full}</Typography.Text>
      {ms > 0 ? (
        <div>
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            {t("took", { duration: formatDuration(ms) })}
          </Typography.Text>
        </div>
      ) : null}
    </div>
  );
}
