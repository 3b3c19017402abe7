// 系统管理 → 监控告警 (Alerting, SPEC O-22): the metrics' values now, then
// rules, events and silences as tabs (the tab in the URL: ?tab=events; each
// tab's list keeps its own filter and page there too).
import { useState } from "react";
import { Card, Col, Row, Statistic, Tabs } from "antd";
import { useSearchParams } from "react-router-dom";
import { useSetParam } from "../../components/useSetParam";
import { useTranslation } from "react-i18next";
import { ErrorAlert } from "../../components/errors";
import { EventsTab } from "./EventsTab";
import { formatValue, useMetricLabel, useMetrics, useUnit } from "./labels";
import { RulesTab } from "./RulesTab";
import { SilenceDialog, type SilencePreset } from "./SilenceDialog";
import { SilencesTab } from "./SilencesTab";

const TABS = ["rules", "events", "silences"] as const;
type Tab = (typeof TABS)[number];

function MetricCards() {
  const metrics = useMetrics();
  const label = useMetricLabel();
  const unit = useUnit();
  if (metrics.error) return <ErrorAlert error={metrics.error} />;
  return (
    <Row gutter={12} style={{ marginBottom: 16 }} data-testid="alert-metrics">
      {(metrics.data?.items ?? []).map((m) => (
        <Col key={m.metric} flex="1 1 180px">
          <Card size="small">
            <Statistic title={label(m.metric)} value={formatValue(m.value)} suffix={unit(m.unit)} valueRender={(node) => <span data-testid={`metric-${m.metric}`}>{node}</span>} />
          </Card>
        </Col>
      ))}
    </Row>
  );
}

export default function AlertsPage() {
  const { t } = useTranslation("alerts");
  const [params] = useSearchParams();
  const setParam = useSetParam();
  const raw = params.get("tab");
  const tab: Tab = (TABS as readonly string[]).includes(raw ?? "") ? (raw as Tab) : "rules";
  const [silence, setSilence] = useState<SilencePreset | null>(null);

  return (
    <div data-testid="alerts-page">
      <MetricCards />
      <Tabs
        activeKey={tab}
        onChange={(next) => setParam("tab", next)}
        items={[
          {
            key: "rules",
            label: <span data-testid="alerts-tab-rules">{t("tabs.rules")}</span>,
            children: (
              <RulesTab
                onSilence={(r) => {
                  setSilence({ ruleId: r.id });
                }}
              />
            ),
          },
          { key: "events", label: <span data-testid="alerts-tab-events">{t("tabs.events")}</span>, children: <EventsTab /> },
          { key: "silences", label: <span data-testid="alerts-tab-silences">{t("tabs.silences")}</span>, children: <SilencesTab onCreate={() => setSilence({})} /> },
        ]}
      />
      <SilenceDialog preset={silence} onClose={() => setSilence(null)} />
    </div>
  );
}
