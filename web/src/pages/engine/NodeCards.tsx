// The engine's nodes (slots in use, heartbeat age, the leases each holds) and
// its pools (pending, due, running, oldest due) as cards (SPEC O-18).
import type { ReactNode } from "react";
import { Card, Col, Descriptions, Progress, Row, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { formatTime } from "../../components/format";
import { formatCount, formatDuration } from "../../components/units";
import { StatusTag } from "../../components/StatusTag";

type Diagnostics = Schemas["EngineDiagnosticsPublic"];

/** A small card of labelled figures: [testid, label, value] per row. */
function FigureCard({ title, testId, rows }: { title: string; testId: string; rows: [string, string, ReactNode][] }) {
  return (
    <Col xs={24} md={12} xl={6}>
      <Card size="small" title={title} data-testid={testId}>
        <Descriptions size="small" column={1}>
          {rows.map(([id, label, value]) => (
            <Descriptions.Item key={id} label={label}>
              <span data-testid={id}>{value}</span>
            </Descriptions.Item>
          ))}
        </Descriptions>
      </Card>
    </Col>
  );
}

export function NodeCards({ data }: { data: Diagnostics }) {
  const { t } = useTranslation("engine");
  const ago = (s: number | null | undefined) => (s == null ? "—" : t("ago", { age: formatDuration(s * 1000) }));
  const slots = (inUse: number, capacity: number) => `${formatCount(inUse)} / ${formatCount(capacity)}`;
  return (
    <>
      <Typography.Title level={5}>{t("nodes.title")}</Typography.Title>
      <Row gutter={[16, 16]} style={{ marginBottom: 16 }}>
        {data.nodes.length === 0 && (
          <Col span={24}>
            <Typography.Text type="secondary">{t("nodes.none")}</Typography.Text>
          </Col>
        )}
        {data.nodes.map((n) => {
          const leases = data.leaders.filter((l) => l.holder === n.id && l.valid);
          return (
            <Col xs={24} md={12} xl={8} key={n.id}>
              <Card
                size="small"
                data-testid={`node-card-${n.id}`}
                title={<span title={n.id}>{n.hostname}</span>}
                extra={
                  <>
                    {leases.length > 0 && <Tag color="gold" data-testid="node-leader">{t("nodes.leader")}</Tag>}
                    <StatusTag status={n.active ? "active" : n.status === "stopped" ? "stopped" : "stale"} />
                  </>
                }
              >
                <Progress aria-label={t("nodes.slots")} percent={n.slotsCapacity ? Math.round((100 * n.slotsInUse) / n.slotsCapacity) : 0} size="small" format={() => slots(n.slotsInUse, n.slotsCapacity)} />
                <Descriptions size="small" column={1} style={{ marginTop: 8 }}>
                  <Descriptions.Item label={t("nodes.id")}><span data-testid="node-id">{n.id}</span></Descriptions.Item>
                  <Descriptions.Item label={t("nodes.slots")}><span data-testid="node-slots">{slots(n.slotsInUse, n.slotsCapacity)}</span></Descriptions.Item>
                  <Descriptions.Item label={t("nodes.heartbeat")}><span data-testid="node-heartbeat">{ago(n.heartbeatAgeS)}</span></Descriptions.Item>
                  <Descriptions.Item label={t("nodes.roles")}>{n.roles.join(", ") || "—"}</Descriptions.Item>
                  <Descriptions.Item label={t("nodes.pools")}>{Object.entries(n.pools).map(([k, v]) => `${k}: ${formatCount(v)}`).join(", ") || "—"}</Descriptions.Item>
                  <Descriptions.Item label={t("nodes.leases")}><span data-testid="node-leases">{leases.map((l) => l.name).join(", ") || "—"}</span></Descriptions.Item>
                  <Descriptions.Item label={t("nodes.started")}>{formatTime(n.startedAt)}</Descriptions.Item>
                </Descriptions>
              </Card>
            </Col>
          );
        })}
      </Row>
      <Typography.Title level={5}>{t("pools.title")}</Typography.Title>
      <Row gutter={[16, 16]} style={{ marginBottom: 16 }}>
        {data.queue.pools.map((p) => (
          <FigureCard
            key={p.pool}
            title={p.pool}
            testId={`pool-card-${p.pool}`}
            rows={[
              ["pool-pending", t("pools.pending"), formatCount(p.pending)],
              ["pool-due", t("pools.due"), formatCount(p.due)],
              ["pool-running", t("pools.running"), formatCount(p.running)],
              ["pool-oldest", t("pools.oldestDue"), ago(p.oldestDueAgeS)],
            ]}
          />
        ))}
        <FigureCard
          title={t("outbox.title")}
          testId="outbox-card"
          rows={[
            ["outbox-pending", t("outbox.pending"), formatCount(data.outbox.pending)],
            ["outbox-failed", t("outbox.failed"), formatCount(data.outbox.failed)],
            ["outbox-oldest", t("outbox.oldest"), ago(data.outbox.oldestPending?.ageS)],
          ]}
        />
        <Col xs={24} md={12} xl={6}>
          <Card size="small" title={t("leaders.title")} data-testid="leaders-card">
            <Descriptions size="small" column={1}>
              {data.leaders.map((l) => (
                <Descriptions.Item key={l.name} label={l.name}>
                  <Typography.Text type={l.valid ? undefined : "secondary"}>{l.valid ? l.holder : t("leaders.expired", { holder: l.holder })}</Typography.Text>
                </Descriptions.Item>
              ))}
            </Descriptions>
            {data.leaders.length === 0 && <Typography.Text type="secondary">{t("leaders.none")}</Typography.Text>}
          </Card>
        </Col>
      </Row>
    </>
  );
}
