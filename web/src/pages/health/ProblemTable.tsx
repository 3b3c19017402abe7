// The health problems of one page, grouped by rule (one collapsible panel per
// rule, in the API's order: critical first, oldest first): the body of the
// health page's list shell (PagedList), which draws the error and the pager. Each row links to
// the instance drawer (InstanceLink adds ?instance=<id>) and to its repair:
// the engine tab's recovery action with its filters, or the instance drawer.
// What is wrong and the suggestion are worded here per rule (problemText.ts).
import { useState } from "react";
import { Collapse, Empty, Table, Tag, Tooltip, Typography } from "antd";
import { Link } from "react-router-dom";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { InstanceLink } from "../../components/InstanceLink";
import { formatTime } from "../../components/format";
import { repairOf, type Rule } from "./query";
import { problemTexts } from "./problemText";
import { formatCount } from "../../components/units";

type Item = Schemas["HealthItem"];
// the rules whose repair on the instance has its own words (repair.instance.*)
const INSTANCE_REPAIRS = ["token_task_mismatch", "waiting_task_stuck", "instance_stalled", "trigger_execution_failed", "webhook_delivery_failed"];

export function LevelTag({ level }: { level: string }) {
  const { t } = useTranslation("health");
  return <Tag color={level === "critical" ? "red" : "orange"}>{t(`level.${level}`)}</Tag>;
}

function RepairLink({ item }: { item: Item }) {
  const { t } = useTranslation(["health", "engine"]);
  const repair = repairOf(item);
  const label =
    repair.kind === "recovery" ? (
      <Link to={repair.href} data-testid={`repair-recovery-${repair.action}`}>{t("repair.recovery", { action: t(`engine:action.${repair.action}.title`) })}</Link>
    ) : repair.kind === "instance" ? (
      <InstanceLink id={repair.instanceId}>{t(`repair.instance.${INSTANCE_REPAIRS.includes(item.rule) ? item.rule : "other"}`)}</InstanceLink>
    ) : (
      <span>—</span>
    );
  return (
    <Tooltip title={<span data-testid="health-suggestion">{problemTexts(t, item).suggestion}</span>}>
      <span data-testid="repair">{label}</span>
    </Tooltip>
  );
}

function groups(items: Item[]): [Rule, Item[]][] {
  const out = new Map<Rule, Item[]>();
  for (const item of items) {
    const rule = item.rule as Rule;
    out.set(rule, [...(out.get(rule) ?? []), item]);
  }
  return [...out.entries()];
}

export function ProblemTable({ items, byRule, loading }: { items: Item[]; byRule: Record<string, number>; loading: boolean }) {
  const { t } = useTranslation("health");
  // every group starts open; a closed one stays closed while the data refreshes
  const [closed, setClosed] = useState<string[]>([]);
  const grouped = groups(items);
  if (!loading && items.length === 0) return <Empty description={t("table.empty")} data-testid="health-empty" />;
  return (
    <Collapse
      data-testid="health-groups"
      activeKey={grouped.map(([rule]) => rule).filter((rule) => !closed.includes(rule))}
      onChange={(open) => setClosed(grouped.map(([rule]) => rule as string).filter((rule) => !(open as string[]).includes(rule)))}
      items={grouped.map(([rule, rows]) => ({
        key: rule,
        label: (
          <span data-testid={`health-group-${rule}`}>
            <LevelTag level={rows[0].level} />
            <Typography.Text strong>{t(`rule.${rule}`)}</Typography.Text>
            <Typography.Text type="secondary">{` · ${t("table.groupCount", { shown: formatCount(rows.length), total: formatCount(byRule[rule] ?? rows.length) })}`}</Typography.Text>
          </span>
        ),
        children: (
          <Table<Item>
            size="small"
            pagination={false}
            rowKey={(r) => `${r.rule}:${r.instanceId ?? ""}:${r.taskId ?? ""}:${r.jobId ?? ""}:${r.since}`}
            dataSource={rows}
            onRow={(r) => ({ "data-testid": `health-row-${r.rule}-${r.instanceId ?? "none"}` }) as object}
            columns={[
              { title: t("col.level"), dataIndex: "level", width: 90, render: (l: string) => <LevelTag level={l} /> },
              { title: t("col.instance"), dataIndex: "instanceId", width: 100, render: (id: number | null) => <InstanceLink id={id} /> },
              { title: t("col.node"), dataIndex: "nodeKey", width: 140, render: (v: string | null) => v ?? "—" },
              { title: t("col.task"), dataIndex: "taskId", width: 80, render: (v: number | null) => v ?? "—" },
              { title: t("col.job"), dataIndex: "jobId", width: 80, render: (v: number | null) => v ?? "—" },
              { title: t("col.since"), dataIndex: "since", width: 170, render: formatTime },
              { title: t("col.message"), dataIndex: "message", render: (_, r) => <span data-testid="health-message">{problemTexts(t, r).message}</span> },
              { title: t("col.repair"), width: 220, render: (_, r) => <RepairLink item={r} /> },
            ]}
          />
        ),
      }))}
    />
  );
}
