import { Tag } from "antd";
import { useTranslation } from "react-i18next";

const COLORS: Record<string, string> = {
  pending: "blue",
  running: "processing",
  paused: "warning",
  succeeded: "success",
  failed: "orange",
  dead: "error",
  canceled: "default",
  skipped: "default",
  resolved: "success",
  terminated: "error",
  delivered: "success",
  approved: "success",
  rejected: "error",
  withdrawn: "default",
  suspended: "warning",
  completed: "success",
  waiting: "processing",
  none: "default",
  active: "success",
  stopped: "default",
  stale: "warning",
};

/** A status as a colored tag, its label from common:status.*. */
export function StatusTag({ status }: { status: string | null | undefined }) {
  const { t } = useTranslation();
  if (!status) return <>—</>;
  return (
    <Tag color={COLORS[status] ?? "default"} data-status={status}>
      {t(`status.${status}`)}
    </Tag>
  );
}
