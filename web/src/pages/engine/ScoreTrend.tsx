// The health score trend (SPEC O-16): the history's snapshot points (one per
// 5-minute interval) as a line chart over a chosen range (last 6 h, 24 h,
// 7 d, 31 d or any window up to the API's 31 days).
import { useMemo, useState } from "react";
import { Card, DatePicker, Typography } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import dayjs, { type Dayjs } from "dayjs";
import { EChart, type ChartOption } from "../../components/EChart";
import { ErrorAlert } from "../../components/errors";
import { formatCount, formatDuration } from "../../components/units";
import { healthHistoryQuery } from "../../api/queries/engine";

const PRESETS: [string, number][] = [
  ["6h", 6],
  ["24h", 24],
  ["7d", 24 * 7],
  ["31d", 24 * 31],
];

export function ScoreTrend() {
  const { t } = useTranslation("engine");
  const [range, setRange] = useState<[Dayjs, Dayjs] | null>(null);
  const history = useQuery({
    ...healthHistoryQuery(range ? { from: range[0].toISOString(), to: range[1].toISOString() } : null),
    placeholderData: keepPreviousData,
    refetchInterval: range ? false : 60_000,
  });
  const points = useMemo(() => history.data?.points ?? [], [history.data]);
  const span = history.data;
  const option = useMemo<ChartOption>(
    () => ({
      animation: false,
      tooltip: { trigger: "axis" },
      grid: { left: 40, right: 16, top: 16, bottom: 56 },
      // the axis spans the asked window, however few points it holds
      xAxis: { type: "time", min: span?.from, max: span?.to },
      yAxis: { type: "value", min: 0, max: 100 },
      dataZoom: [{ type: "inside" }, { type: "slider", height: 18, bottom: 8 }],
      series: [
        {
          name: t("trend.score"),
          type: "line",
          showSymbol: points.length < 60,
          data: points.map((p) => [p.takenAt, p.score]),
        },
      ],
    }),
    [points, span, t],
  );
  return (
    <Card size="small" title={t("trend.title")} style={{ marginBottom: 16 }} data-testid="trend-card">
      <DatePicker.RangePicker
        showTime
        allowClear
        value={range}
        placeholder={[t("trend.from"), t("trend.to")]}
        disabledDate={(d) => d.isAfter(dayjs())}
        presets={PRESETS.map(([key, hours]) => ({ label: t(`trend.last.${key}`), value: () => [dayjs().subtract(hours, "hour"), dayjs()] as [Dayjs, Dayjs] }))}
        onChange={(v) => setRange(v && v[0] && v[1] ? [v[0], v[1]] : null)}
      />
      {history.error ? <ErrorAlert error={history.error} /> : null}
      <EChart option={option} height={260} testId="trend-chart" />
      <Typography.Text type="secondary" data-testid="trend-points">
        {t("trend.points", { n: formatCount(points.length), interval: formatDuration((history.data?.intervalSeconds ?? 300) * 1000) })}
      </Typography.Text>
    </Card>
  );
}
