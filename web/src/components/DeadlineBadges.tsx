// A task's or an instance's deadline states (issue 31 item 4) as tags:
// due soon, overdue, escalated; labels from common:deadline.*.
import { Space, Tag, Tooltip } from "antd";
import { useTranslation } from "react-i18next";
import { formatTime } from "./format";

export type DeadlineState = "overdue" | "due_soon" | "escalated";

const COLORS: Record<DeadlineState, string> = { due_soon: "gold", overdue: "red", escalated: "purple" };

export function DeadlineBadges({ states, escalatedAt }: { states: DeadlineState[]; escalatedAt?: string | null }) {
  const { t } = useTranslation();
  if (!states.length) return null;
  return (
    <Space size={2} wrap>
      {states.map((s) => (
        <Tooltip key={s} title={s === "escalated" && escalatedAt ? t("deadline.escalatedAt", { at: formatTime(escalatedAt) }) : undefined}>
          <Tag color={COLORS[s]} data-testid={`deadline-${s}`}>
            {t(`deadline.${s}`)}
          </Tag>
        </Tooltip>
      ))}
    </Space>
  );
}

/** The states of one task from its flags. */
export function taskStates(task: { dueSoon?: boolean; overdue?: boolean; escalatedAt?: string | null; status: string }): DeadlineState[] {
  const out: DeadlineState[] = [];
  if (task.overdue) out.push("overdue");
  if (task.dueSoon) out.push("due_soon");
  if (task.escalatedAt && task.status === "pending") out.push("escalated");
  return out;
}
