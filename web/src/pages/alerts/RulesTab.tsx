// Alert rules (SPEC O-22): the list with each rule's state and last value,
// enable / disable in place, edit, delete (confirmed) and "silence this rule".
import { useState } from "react";
import { App, Button, Popconfirm, Space, Switch, Tooltip } from "antd";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { useListState } from "../../components/useListState";
import { PagedTable } from "./PagedTable";
import { SeverityTag, StateTag, comparisonSymbol, formatValue, useMetricLabel } from "./labels";
import { RuleDialog } from "./RuleDialog";
import { ActionLink } from "../../components/ActionLink";
import { formatDuration } from "../../components/units";
import { alertKeys, alertRulesQuery } from "../../api/queries/alerts";

type Rule = Schemas["RulePublic"];

function channelsOf(r: Rule): string {
  const parts = [...r.channels.email, ...(r.channels.webhook ? [r.channels.webhook.url] : []), ...r.channels.inApp.map((u) => `@${u}`)];
  return parts.length ? parts.join(", ") : "—";
}

export function RulesTab({ onSilence }: { onSilence: (rule: Rule) => void }) {
  const { t } = useTranslation("alerts");
  const { message } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const metricLabel = useMetricLabel();
  const { pager } = useListState(undefined, { cursor: "rulesCursor" });
  const [editing, setEditing] = useState<Rule | "new" | null>(null);
  const list = useQuery({
    ...alertRulesQuery(pager.cursor),
    placeholderData: keepPreviousData,
  });
  const refresh = () => client.invalidateQueries({ queryKey: alertKeys.rules() });

  async function toggle(r: Rule, enabled: boolean) {
    try {
      await unwrap(api.PATCH("/api/workflows/engine/alerts/rules/{ruleId}", { params: { path: { ruleId: r.id } }, body: { enabled } }));
      await refresh();
    } catch (e) {
      showError(e);
    }
  }

  async function remove(r: Rule) {
    try {
      await unwrap(api.DELETE("/api/workflows/engine/alerts/rules/{ruleId}", { params: { path: { ruleId: r.id } } }));
      message.success(t("rule.deleted", { name: r.name }));
      await refresh();
    } catch (e) {
      showError(e);
    }
  }

  return (
    <div data-testid="alert-rules">
      <Space style={{ marginBottom: 12 }}>
        <Button type="primary" onClick={() => setEditing("new")} data-testid="rule-create">
          {t("rule.create")}
        </Button>
        <Button onClick={() => void refresh()}>{t("common:refresh")}</Button>
      </Space>
      <PagedTable<Rule>
        testId="rules-table"
        query={list}
        pager={pager}
        emptyText={t("rule.none")}
        columns={[
          { title: t("rule.name"), dataIndex: "name" },
          { title: t("rule.metric"), dataIndex: "metric", render: (m: string) => <Tooltip title={m}>{metricLabel(m)}</Tooltip> },
          { title: t("rule.condition"), key: "condition", render: (_, r) => `${comparisonSymbol(r.comparison)} ${formatValue(r.threshold)}` },
          { title: t("rule.for"), dataIndex: "forSeconds", render: (s: number, r) => <span title={r.for}>{formatDuration(s * 1000)}</span> },
          { title: t("rule.severity"), dataIndex: "severity", render: (s: string) => <SeverityTag severity={s} /> },
          { title: t("rule.channels"), key: "channels", ellipsis: true, width: 220, render: (_, r) => channelsOf(r) },
          { title: t("rule.tenant"), dataIndex: "tenant", render: (v: string | null) => v ?? t("rule.allTenants") },
          {
            title: t("rule.state"),
            dataIndex: "state",
            render: (s: string, r) => (
              <Tooltip title={r.stateSince ? t("rule.stateSince", { time: formatTime(r.stateSince) }) : undefined}>
                <span>
                  <StateTag state={s} testId={`rule-state-${r.id}`} />
                </span>
              </Tooltip>
            ),
          },
          { title: t("rule.lastValue"), dataIndex: "lastValue", align: "right", render: (v: number | null) => formatValue(v) },
          { title: t("common:enabled"), dataIndex: "enabled", render: (v: boolean, r) => <Switch checked={v} onChange={(on) => void toggle(r, on)} aria-label={`${t("common:enabled")}: ${r.name}`} data-testid={`rule-enabled-${r.id}`} /> },
          {
            title: "",
            key: "actions",
            render: (_, r) => (
              <Space>
                <ActionLink onClick={() => setEditing(r)} data-testid={`rule-edit-${r.id}`}>
                  {t("common:edit")}
                </ActionLink>
                <ActionLink onClick={() => onSilence(r)} data-testid={`rule-silence-${r.id}`}>
                  {t("rule.silence")}
                </ActionLink>
                <Popconfirm
                  title={t("rule.deleteConfirm", { name: r.name })}
                  onConfirm={() => remove(r)}
                  okText={t("common:delete")}
                  cancelText={t("common:cancel")}
                  okButtonProps={{ danger: true, ...({ "data-testid": "confirm-ok" } as Record<string, string>) }}
                >
                  <ActionLink data-testid={`rule-delete-${r.id}`}>{t("common:delete")}</ActionLink>
                </Popconfirm>
              </Space>
            ),
          },
        ]}
      />
      <RuleDialog rule={editing} onClose={() => setEditing(null)} />
    </div>
  );
}
