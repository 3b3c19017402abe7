// An operator's intervention in the engine trace (issue 31 item 2): a trace
// row of kind "intervention" — what was done (its action code, worded in
// both languages), who, when, why, and each change before → after.
import { ToolOutlined } from "@ant-design/icons";
import { Tag, Typography } from "antd";
import type { TFunction } from "i18next";
import { useTranslation } from "react-i18next";
import { formatTime } from "../format";
import type { InterventionChange, TraceRow } from "../../api/diagnosticsDocument";

const ENTITIES = new Set(["task", "job", "ticket"]);

/** "node", "form.days", "task.12.status" → words of the field. */
function fieldLabel(t: TFunction, field: string): string {
  const parts = field.split(".");
  const plain = (name: string) => t(`intervention.field.${name}`, { defaultValue: name });
  if (parts[0] === "form" && parts.length > 1) return t("intervention.field.form", { key: parts.slice(1).join(".") });
  if (ENTITIES.has(parts[0]) && parts.length === 3) {
    return `${t(`intervention.entity.${parts[0]}`, { id: parts[1] })} · ${plain(parts[2])}`;
  }
  return plain(field);
}

function valueText(t: TFunction, field: string, value: unknown): string {
  // a status in the console's words (common:status.*), as the status tags say it
  if (typeof value === "string" && (field === "status" || field.endsWith(".status"))) {
    return t(`status.${value}`, { ns: "common", defaultValue: value });
  }
  if (value === null || value === undefined || (Array.isArray(value) && value.length === 0)) return t("intervention.empty");
  if (Array.isArray(value)) return value.join(", ");
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export function InterventionIcon() {
  return <ToolOutlined data-testid="intervention-icon" />;
}

export function InterventionEntry({ row }: { row: TraceRow }) {
  const { t } = useTranslation("instance");
  const action = row.action ?? "";
  const changes: InterventionChange[] = row.changes ?? [];
  return (
    <div data-testid="trace-row" data-kind="intervention" data-action={action}>
      <Typography.Text type="secondary">{formatTime(row.createdAt)}</Typography.Text>{" "}
      <Tag color="orange" icon={<InterventionIcon />} data-testid="intervention-tag">
        {t("intervention.tag")}
      </Tag>
      <Typography.Text strong data-testid="intervention-action">
        {t(`intervention.action.${action}`, { defaultValue: action })}
      </Typography.Text>{" "}
      <Typography.Text data-testid="intervention-actor">{t("intervention.by", { actor: row.actor ?? "—" })}</Typography.Text>
      <div data-testid="intervention-reason">
        <Typography.Text type={row.reason ? undefined : "secondary"}>
          {row.reason ? t("intervention.reason", { reason: row.reason }) : t("intervention.noReason")}
        </Typography.Text>
      </div>
      {changes.length > 0 && (
        <ul style={{ margin: "4px 0 0", paddingInlineStart: 20 }} data-testid="intervention-changes">
          {changes.map((c) => (
            <li key={c.field} data-testid="intervention-change" data-field={c.field}>
              <Typography.Text>{t("intervention.change", { field: fieldLabel(t, c.field) })}</Typography.Text>
              <Typography.Text type="secondary" data-testid="change-before">
                {valueText(t, c.field, c.before)}
              </Typography.Text>
              <Typography.Text> → </Typography.Text>
              <Typography.Text strong data-testid="change-after">
                {valueText(t, c.field, c.after)}
              </Typography.Text>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
