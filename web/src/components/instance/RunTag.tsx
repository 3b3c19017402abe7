// A status of any row of the drawer: the shared status label when common
// has one, this namespace's label for run states, else the raw value.
import { Tag } from "antd";
import { useTranslation } from "react-i18next";
import { StatusTag } from "../StatusTag";

export const STATE_COLORS: Record<string, { border: string; background: string; tag: string }> = {
  done: { border: "#52c41a", background: "#f6ffed", tag: "success" },
  active: { border: "#1677ff", background: "#e6f4ff", tag: "processing" },
  waiting: { border: "#fa8c16", background: "#fff7e6", tag: "warning" },
  failed: { border: "#cf1322", background: "#fff1f0", tag: "error" },
  skipped: { border: "#8c8c8c", background: "#f5f5f5", tag: "default" },
  not_reached: { border: "#d9d9d9", background: "#ffffff", tag: "default" },
};

export function RunTag({ status }: { status: string | null | undefined }) {
  const { t, i18n } = useTranslation("instance");
  if (!status) return <>—</>;
  if (i18n.exists(`state.${status}`, { ns: "instance" })) {
    return (
      <Tag color={STATE_COLORS[status]?.tag ?? "default"} data-status={status}>
        {t(`state.${status}`)}
      </Tag>
    );
  }
  if (i18n.exists(`status.${status}`, { ns: "common" })) return <StatusTag status={status} />;
  return <Tag data-status={status}>{status}</Tag>;
}
