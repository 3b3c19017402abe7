// The runtime status panel (SPEC L-23): every figure of runtime-status
// (the read replica's lag only when there is one), refreshed every 5 s. The previous figures stay on screen while a refresh
// is in flight (no spinner, no layout change), so nothing flickers. Below
// the figures: the paused pools and job types (PausedScopes).
import { Card, Col, Popover, Row, Statistic, Table, Typography } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { runtimeStatusQuery, workersQuery } from "./queries";
import { ErrorAlert } from "../../components/errors";
import { formatTime } from "../../components/format";
import { formatCount, formatDuration, formatNumber } from "../../components/units";
import { StatusTag } from "../../components/StatusTag";
import { PausedScopes } from "./PausedScopes";
import { useLiveInterval } from "../../live/context";

type Node = Schemas["WorkerNodePublic"];

function WorkersCard({ nodes }: { nodes: Node[] }) {
  const { t } = useTranslation("jobs");
  return (
    <Table<Node>
      data-testid="workers-card"
      size="small"
      rowKey="id"
      pagination={false}
      dataSource={nodes}
      locale={{ emptyText: <Typography.Text type="secondary">{t("runtime.noWorkers")}</Typography.Text> }}
      columns={[
        { title: t("runtime.node"), dataIndex: "id", render: (id: string, n) => <span title={n.hostname}>{id}</span> },
        { title: t("runtime.nodeStatus"), render: (_, n) => <StatusTag status={n.active ? "active" : n.status === "stopped" ? "stopped" : "stale"} /> },
        { title: t("runtime.nodePools"), dataIndex: "pools", render: (p: Record<string, number>) => Object.entries(p).map(([k, v]) => `${k}: ${formatCount(v)}`).join(", ") },
        { title: t("runtime.nodeSlots"), render: (_, n) => `${formatCount(n.slotsInUse)} / ${formatCount(n.slotsCapacity)}` },
        { title: t("runtime.heartbeatAge"), dataIndex: "heartbeatAgeSeconds", render: (s: number) => t("runtime.ago", { age: formatDuration(s * 1000) }) },
      ]}
    />
  );
}

export function RuntimePanel() {
  const { t } = useTranslation("jobs");
  const live = useLiveInterval(5_000); // longer while the change stream is up (issue 33 item 2)
  const status = useQuery({
    ...runtimeStatusQuery(),
    refetchInterval: live,
    placeholderData: keepPreviousData,
  });
  const workers = useQuery({
    ...workersQuery(),
    refetchInterval: live,
    placeholderData: keepPreviousData,
  });
  const s = status.data;
  const pct = (v: number | null | undefined) => (v === null || v === undefined ? "—" : `${formatNumber(v * 100, 1)}%`);
  const figures: { key: string; value: React.ReactNode }[] = s
    ? [
        { key: "slots", value: `${formatCount(s.slots.inUse)} / ${formatCount(s.slots.capacity)}` },
        { key: "inFlight", value: formatCount(s.inFlight) },
        { key: "stuck", value: formatCount(s.stuck) },
        { key: "backlog", value: formatCount(s.backlog) },
        { key: "oldestQueued", value: s.oldestQueuedSeconds == null ? "—" : formatDuration(s.oldestQueuedSeconds * 1000) },
        { key: "queueP95", value: formatDuration(s.queueP95Ms) },
        { key: "queueP99", value: formatDuration(s.queueP99Ms) },
        { key: "dead", value: formatCount(s.dead) },
        { key: "failureRate", value: pct(s.failureRate1h) },
        { key: "avgDuration", value: formatDuration(s.avgDurationMs1h) },
        { key: "attempts1h", value: `${formatCount(s.attempts1h)} / ${formatCount(s.failedAttempts1h)}` },
        { key: "lastClaim", value: formatTime(s.lastClaimAt) },
        // only with a read replica configured (issue 34 item 6)
        ...(s.replicaLagMs == null ? [] : [{ key: "replicaLag", value: formatDuration(s.replicaLagMs) }]),
      ]
    : [];
  return (
    <Card
      size="small"
      title={t("runtime.title")}
      extra={<Typography.Text type="secondary" data-testid="runtime-updated">{s ? t("runtime.updated", { time: formatTime(s.now) }) : ""}</Typography.Text>}
      style={{ marginBottom: 16 }}
      data-testid="runtime-panel"
    >
      {status.error ? <ErrorAlert error={status.error} /> : null}
      <Row gutter={[16, 12]} style={{ minHeight: 128 }}>
        {s && (
          <Col xs={12} md={6} xl={4}>
            <Popover content={<WorkersCard nodes={workers.data?.items ?? []} />} title={t("runtime.workersTitle")}>
              <div data-testid="runtime-liveWorkers" style={{ cursor: "help" }}>
                <Statistic title={t("runtime.liveWorkers")} value={`${formatCount(s.liveWorkers.active)} / ${formatCount(s.liveWorkers.total)}`} />
              </div>
            </Popover>
          </Col>
        )}
        {figures.map((f) => (
          <Col xs={12} md={6} xl={f.key === "lastClaim" ? 8 : 4} key={f.key}>
            <div data-testid={`runtime-${f.key}`}>
              <Statistic title={t(`runtime.${f.key}`)} value={f.value as string} valueStyle={{ fontSize: 20 }} />
            </div>
          </Col>
        ))}
      </Row>
      <PausedScopes />
    </Card>
  );
}
