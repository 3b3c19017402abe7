// The queue distribution (SPEC O-18): job counts by type x status as a
// stacked bar chart (ECharts through the console's one chart wrapper).
import { useMemo } from "react";
import { Card } from "antd";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { EChart, type ChartOption } from "../../components/EChart";
import { formatCount } from "../../components/units";

type Count = Schemas["TypeStatusCount"];
// one colour per status, whichever statuses a refresh holds
const STATUS_COLORS: Record<string, string> = {
  pending: "#fac858",
  running: "#5470c6",
  paused: "#9a60b4",
  succeeded: "#91cc75",
  failed: "#fc8452",
  dead: "#ee6666",
  canceled: "#a0a7b4",
};

export function QueueChart({ counts }: { counts: Count[] }) {
  const { t } = useTranslation("engine");
  const option = useMemo<ChartOption>(() => {
    const types = [...new Set(counts.map((c) => c.type))].sort();
    const statuses = [...new Set(counts.map((c) => c.status))].sort();
    // a status the planner estimated somewhere (an exact count would read
    // millions of rows) is named "≈" in the legend and the tooltip
    const rough = new Set(counts.filter((c) => c.estimated).map((c) => c.status));
    return {
      animation: false, // refreshed every 10 s: bars change in place
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: (v: unknown) => formatCount(Number(v)) },
      legend: { top: 0 },
      grid: { left: 16, right: 16, top: 36, bottom: 72, containLabel: true },
      xAxis: { type: "category", data: types, axisLabel: { rotate: 30 } },
      yAxis: { type: "value", minInterval: 1, axisLabel: { formatter: (v: number) => formatCount(v) } },
      series: statuses.map((s) => ({
        name: `${t(`common:status.${s}`)}${rough.has(s) ? " ≈" : ""}`,
        type: "bar",
        stack: "jobs",
        itemStyle: { color: STATUS_COLORS[s] },
        data: types.map((ty) => counts.find((c) => c.type === ty && c.status === s)?.count ?? 0),
      })),
    };
  }, [counts, t]);
  return (
    <Card size="small" title={t("queue.title")} style={{ marginBottom: 16 }}>
      <EChart option={option} height={320} testId="queue-chart" />
    </Card>
  );
}
