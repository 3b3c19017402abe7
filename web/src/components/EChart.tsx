// One ECharts chart (the console's only chart component; never a hand-drawn
// chart). ECharts is imported piecemeal — line and bar series, the grid,
// tooltip, legend, data zoom and the canvas renderer — so a page that draws
// a chart pulls only these into its own lazy chunk. `option` is a plain
// ECharts option; the chart follows its container's width and the console's
// color scheme (ECharts' own dark theme on a transparent background).
import { useEffect, useRef } from "react";
import * as echarts from "echarts/core";
import { BarChart, LineChart } from "echarts/charts";
import { DataZoomComponent, GridComponent, LegendComponent, TooltipComponent } from "echarts/components";
import { CanvasRenderer } from "echarts/renderers";
import type { EChartsCoreOption } from "echarts/core";
import { useTheme } from "../theme/ThemeProvider";

echarts.use([BarChart, LineChart, GridComponent, TooltipComponent, LegendComponent, DataZoomComponent, CanvasRenderer]);

export type ChartOption = EChartsCoreOption;

export function EChart({ option, height = 280, testId }: { option: ChartOption; height?: number; testId?: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  const { scheme } = useTheme();
  const latest = useRef(option);
  latest.current = option;

  useEffect(() => {
    if (!ref.current) return;
    const instance = echarts.init(ref.current, scheme === "dark" ? "dark" : undefined);
    instance.setOption({ backgroundColor: "transparent", ...latest.current }, { notMerge: true });
    chart.current = instance;
    const observer = new ResizeObserver(() => instance.resize());
    observer.observe(ref.current);
    return () => {
      observer.disconnect();
      instance.dispose();
      chart.current = null;
    };
  }, [scheme]);

  useEffect(() => {
    chart.current?.setOption({ backgroundColor: "transparent", ...option }, { notMerge: true });
  }, [option]);

  return <div ref={ref} style={{ width: "100%", height }} data-testid={testId} />;
}
