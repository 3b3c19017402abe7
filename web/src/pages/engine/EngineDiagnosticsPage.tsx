// 引擎诊断 (Engine diagnostics, SPEC O-16 and O-18): node and pool cards, the
// queue distribution, the health score trend and the targeted recovery
// actions, the last data-retention run, and the paused pools and job types (who, why, since). The figures refresh every 10 s; the previous ones stay on screen.
import { useEffect } from "react";
import { Alert, Card, Col, Row, Statistic, Typography } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { useLocation } from "react-router-dom";
import { ErrorAlert } from "../../components/errors";
import { formatTime } from "../../components/format";
import { NodeCards } from "./NodeCards";
import { QueueChart } from "./QueueChart";
import { RecoveryPanel } from "./RecoveryPanel";
import { RetentionCard } from "./RetentionCard";
import { ScoreTrend } from "./ScoreTrend";
import { useLiveInterval } from "../../live/context";
import { engineDiagnosticsQuery, healthScoreQuery } from "../../api/queries/engine";

export default function EngineDiagnosticsPage() {
  const { t } = useTranslation("engine");
  const location = useLocation();
  const diagnostics = useQuery({
    ...engineDiagnosticsQuery(),
    refetchInterval: useLiveInterval(10_000),
    placeholderData: keepPreviousData,
  });
  const score = useQuery({
    ...healthScoreQuery(),
    refetchInterval: useLiveInterval(30_000),
    placeholderData: keepPreviousData,
  });
  const data = diagnostics.data;
  // a link from the health inspection lands on the recovery actions
  useEffect(() => {
    if (data && location.hash === "#recovery") document.getElementById("recovery")?.scrollIntoView();
  }, [data, location.hash]);

  return (
    <div data-testid="page-engine">
      {diagnostics.error ? <ErrorAlert error={diagnostics.error} /> : null}
      <Row gutter={16} style={{ marginBottom: 16 }}>
        <Col xs={12} md={6}>
          <Card size="small" data-testid="engine-score">
            <Statistic title={t("score.title")} value={score.data?.score ?? "—"} suffix={score.data ? "/ 100" : undefined} />
          </Card>
        </Col>
        <Col xs={12} md={6}>
          <Card size="small">
            <Statistic title={t("score.drain")} value={data?.drain ? formatTime(data.drain.finishedAt) : "—"} valueStyle={{ fontSize: 16 }} />
          </Card>
        </Col>
        <Col xs={12} md={6}>
          <Card size="small">
            <Statistic title={t("score.planner")} value={data?.schedulePlanner ? formatTime(data.schedulePlanner.finishedAt) : "—"} valueStyle={{ fontSize: 16 }} />
          </Card>
        </Col>
        <Col xs={12} md={6}>
          <Card size="small">
            <Statistic title={t("score.slots")} value={data ? `${data.settings.ledgerSlots} / ${data.settings.outboundSlots}` : "—"} />
          </Card>
        </Col>
      </Row>
      {data && data.pausedScopes.length > 0 && (
        <Alert
          type="warning"
          showIcon
          style={{ marginBottom: 16 }}
          data-testid="engine-paused"
          message={t("paused.title", { n: data.pausedScopes.length })}
          description={
            <ul style={{ margin: 0, paddingInlineStart: 20 }}>
              {data.pausedScopes.map((p) => (
                <li key={`${p.scope}:${p.value}`} data-testid={`engine-paused-${p.scope}-${p.value}`}>
                  {t("paused.item", { kind: t(`paused.kind.${p.scope}`), value: p.value, by: p.pausedBy, since: formatTime(p.since), reason: p.reason })}
                </li>
              ))}
            </ul>
          }
        />
      )}
      {data && <NodeCards data={data} />}
      <Row gutter={16}>
        <Col xs={24} xl={12}>
          <QueueChart counts={data?.queue.byTypeStatus ?? []} />
        </Col>
        <Col xs={24} xl={12}>
          <ScoreTrend />
        </Col>
      </Row>
      <RetentionCard />
      <RecoveryPanel />
      <Typography.Text type="secondary">{data ? t("asOf", { time: formatTime(data.now) }) : ""}</Typography.Text>
    </div>
  );
}
