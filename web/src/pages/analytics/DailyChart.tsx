// O-14 daily starts and finishes over the last 14 local days (the browser's
// time zone), today and empty days included, as an ECharts line chart.
import { useMemo } from "react";
import { Typography } from "antd";
import { useTranslation } from "react-i18next";
import { EChart, type ChartOption } from "../../components/EChart";
import { formatCount } from "../../components/units";
import { PanelCard } from "./PanelCard";
import { usePanel } from "./useAnalytics";

export function DailyChart({ definitionKey }: { definitionKey?: string }) {
  const { t } = useTranslation("analytics");
  const q = usePanel("daily", definitionKey);
  const days = q.data?.days;
  const option = useMemo<ChartOption>(
    () => ({
      tooltip: { trigger: "axis", valueFormatter: (v: unknown) => formatCount(Number(v)) },
      legend: { top: 0 },
      grid: { left: 16, right: 16, top: 36, bottom: 28, containLabel: true },
      xAxis: { type: "category", data: (days ?? []).map((d) => d.date.slice(5)) },
      yAxis: { type: "value", minInterval: 1, axisLabel: { formatter: (v: number) => formatCount(v) } },
      series: [
        { name: t("daily.starts"), type: "line", data: (days ?? []).map((d) => d.starts) },
        { name: t("daily.finishes"), type: "line", data: (days ?? []).map((d) => d.finishes) },
      ],
    }),
    [days, t],
  );
  return (
    <PanelCard
      title={t("daily.title")}
      testId="panel-daily"
      loading={q.isLoading}
      error={q.error}
      extra={q.data ? <Typography.Text type="secondary">{t("daily.timeZone", { zone: q.data.timeZone })}</Typography.Text> : null}
    >
      <EChart option={option} height={260} testId="daily-chart" />
    </PanelCard>
  );
}
