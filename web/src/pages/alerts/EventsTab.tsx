// Alert events (SPEC O-22), newest first: each firing or resolved transition
// with the value that decided it, the condition, whether it was silenced
// and when it was notified; filtered by kind (?kind=, with the page in the URL).
import { Button, Select, Space, Tag } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { type Schemas } from "../../api/client";
import { formatTime } from "../../components/format";
import { useListState } from "../../components/useListState";
import { PagedTable } from "./PagedTable";
import { SeverityTag, StateTag, comparisonSymbol, formatValue, useMetricLabel } from "./labels";
import { alertEventsQuery } from "../../api/queries/alerts";

type Event = Schemas["EventPublic"];
type Kind = "firing" | "resolved";
const EVENT_FILTERS = { kind: "one" } as const;

export function EventsTab() {
  const { t } = useTranslation("alerts");
  const metricLabel = useMetricLabel();
  const { values, pager, set } = useListState(EVENT_FILTERS, { cursor: "eventsCursor" });
  const kind = values.kind === "firing" || values.kind === "resolved" ? values.kind : undefined;
  const list = useQuery({
    ...alertEventsQuery(kind, pager.cursor),
    placeholderData: keepPreviousData,
  });
  return (
    <div data-testid="alert-events">
      <Space style={{ marginBottom: 12 }}>
        <Select<Kind>
          data-testid="event-kind-filter" aria-label={t("event.allKinds")}
          allowClear
          style={{ width: 160 }}
          placeholder={t("event.allKinds")}
          value={kind}
          onChange={(k) => set({ kind: k })}
          options={(["firing", "resolved"] as const).map((k) => ({ value: k, label: t(`state.${k}`) }))}
        />
        <Button onClick={() => void list.refetch()} data-testid="events-refresh">
          {t("common:refresh")}
        </Button>
      </Space>
      <PagedTable<Event>
        testId="events-table"
        query={list}
        pager={pager}
        emptyText={t("event.none")}
        columns={[
          { title: t("event.occurredAt"), dataIndex: "occurredAt", width: 170, render: formatTime },
          { title: t("event.kind"), dataIndex: "kind", render: (k: string, e) => <StateTag state={k} testId={`event-kind-${e.id}`} /> },
          { title: t("event.rule"), dataIndex: "ruleName", render: (n: string, e) => `#${e.ruleId} ${n}` },
          { title: t("rule.metric"), dataIndex: "metric", render: (m: string) => metricLabel(m) },
          { title: t("event.value"), dataIndex: "value", align: "right", render: (v: number | null, e) => <span data-testid={`event-value-${e.id}`}>{formatValue(v)}</span> },
          { title: t("rule.condition"), key: "condition", render: (_, e) => `${comparisonSymbol(e.comparison)} ${formatValue(e.threshold)}` },
          { title: t("rule.severity"), dataIndex: "severity", render: (s: string) => <SeverityTag severity={s} /> },
          { title: t("event.silenced"), dataIndex: "silenced", render: (s: boolean) => (s ? <Tag>{t("event.silencedYes")}</Tag> : "—") },
          { title: t("event.notifiedAt"), dataIndex: "notifiedAt", width: 170, render: formatTime },
        ]}
      />
    </div>
  );
}
