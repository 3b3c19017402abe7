// A status of any row of the drawer: the shared status label when common
// has one, this namespace's label for run states, else the raw value.
import { Tag } from "antd";
import { useTranslation } from "react-i18next";
import { StatusTag } from "../StatusTag";

// the tag of each run state (the diagram's colors per scheme: theme/tokens.ts)
const STATE_TAGS: Record<string, string> = { done: "success", active: "processing", waiting: "warning", failed: "error", skipped: "default", not_reached: "default" };

export function RunTag({ status }: { status: string | null | undefined }) {
  const { t, i18n } = useTranslation("instance");
  if (!status) return <>—</>;
  if (i18n.exists(`state.${status}`, { ns: "instance" })) {
    return (
      <Tag color={STATE_TAGS[status] ?? "default"} data-status={status}>
        {t(`state.${status}`)}
      </Tag>
    );
  }
  if (i18n.exists(`status.${status}`, { ns: "common" })) return <StatusTag status={status} />;
  return <Tag data-status={status}>{status}</Tag>;
}
