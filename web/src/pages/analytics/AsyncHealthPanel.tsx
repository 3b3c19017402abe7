// O-14 async health: jobs per type and status (a stacked ECharts bar, the
// figures in a table beside it), webhook deliveries and subprocess
// instances per status.
import { useMemo } from "react";
import { Col, Descriptions, Row, Space, Table } from "antd";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { EChart, type ChartOption } from "../../components/EChart";
import { formatCount } from "../../components/units";
import { StatusTag } from "../../components/StatusTag";
import { PanelCard } from "./PanelCard";
import { usePanel } from "./useAnalytics";

// one colour per status, the same meaning as the status tags
const STATUS_COLORS: Record<string, string> = {
  pending: "#1677ff",
  running: "#13c2c2",
  paused: "#faad14",
  succeeded: "#52c41a",
  failed: "#fa8c16",
  dead: "#f5222d",
  canceled: "#bfbfbf",
};

// a figure the planner estimated (an exact count would read millions of rows) reads "≈ n"
function Counts({ byStatus, estimated, testId }: { byStatus: Record<string, number>; estimated?: string[]; testId: string }) {
  const nonZero = Object.entries(byStatus).filter(([, n]) => n > 0);
  const rough = new Set(estimated ?? []);
  return (
    <Space wrap size={4} data-testid={testId}>
      {nonZero.length === 0 ? "—" : nonZero.map(([s, n]) => (
        <span key={s}>
          <StatusTag status={s} />
          {rough.has(s) ? "≈ " : ""}
          {formatCount(n)}
        </span>
      ))}
    </Space>
  );
}

export function AsyncHealthPanel({ definitionKey }: { definitionKey?: string }) {
  const { t } = useTranslation("analytics");
  const q = usePanel("asyncHealth", definitionKey);
  const jobs = q.data?.jobs;
  const option = useMemo<ChartOption>(() => {
    const statuses = [...new Set((jobs ?? []).flatMap((j) => Object.keys(j.byStatus)))];
    return {
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: (v: unknown) => formatCount(Number(v)) },
      legend: { top: 0, type: "scroll" },
      grid: { left: 120, right: 28, top: 36, bottom: 24 },
      xAxis: { type: "value", minInterval: 1, axisLabel: { formatter: (v: number) => formatCount(v) } },
      yAxis: { type: "category", data: (jobs ?? []).map((j) => j.type) },
      series: statuses.map((s) => ({ name: t(`common:status.${s}`), type: "bar", stack: "jobs", itemStyle: { color: STATUS_COLORS[s] }, data: (jobs ?? []).map((j) => j.byStatus[s] ?? 0) })),
    };
  }, [jobs, t]);
  return (
    <PanelCard title={t("async.title")} testId="panel-async-health" loading={q.isLoading} error={q.error}>
      <Row gutter={16}>
        <Col xs={24} xl={12}>
          <EChart option={option} height={Math.max(180, 40 + (jobs?.length ?? 0) * 32)} testId="async-chart" />
        </Col>
        <Col xs={24} xl={12}>
          <Table<Schemas["JobTypeHealth"]>
            size="small"
            rowKey="type"
            pagination={false}
            dataSource={jobs ?? []}
            columns={[
              { title: t("async.jobType"), dataIndex: "type" },
              { title: t("top.total"), dataIndex: "total", align: "right", render: formatCount },
              { title: t("async.byStatus"), dataIndex: "byStatus", render: (b: Record<string, number>, r) => <Counts byStatus={b} estimated={r.estimatedStatuses} testId={`async-job-${r.type}`} /> },
            ]}
          />
          <Descriptions size="small" column={1} style={{ marginTop: 12 }}>
            <Descriptions.Item label={t("async.webhooks", { n: formatCount(q.data?.webhookDeliveries.total ?? 0) })}>
              <Counts byStatus={q.data?.webhookDeliveries.byStatus ?? {}} estimated={q.data?.webhookDeliveries.estimatedStatuses} testId="async-webhooks" />
            </Descriptions.Item>
            <Descriptions.Item label={t("async.subprocesses", { n: formatCount(q.data?.subprocessInstances.total ?? 0) })}>
              <Counts byStatus={q.data?.subprocessInstances.byStatus ?? {}} estimated={q.data?.subprocessInstances.estimatedStatuses} testId="async-subprocesses" />
            </Descriptions.Item>
          </Descriptions>
        </Col>
      </Row>
    </PanelCard>
  );
}
