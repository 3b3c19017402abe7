// The alerting page's shared vocabulary: the metric list from the API (names
// translated when known, with the unit and the value now), severity and
// state tags, and comparisons as symbols.
import { Tag } from "antd";
import { useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { formatNumber } from "../../components/units";
import { alertMetricsQuery } from "../../api/queries/alerts";

export const COMPARISONS = { gt: ">", gte: "≥", lt: "<", lte: "≤" } as const;
export const SEVERITIES = ["info", "warning", "critical"] as const;

const SEVERITY_COLORS: Record<string, string> = { info: "blue", warning: "orange", critical: "red" };
const STATE_COLORS: Record<string, string> = { ok: "green", pending: "gold", firing: "red", resolved: "cyan", active: "purple", expired: "default" };

/** The alert metrics the API knows (GET /engine/alerts/metrics: name, unit,
 * value now — over the whole engine for a caller who sees every tenant, else
 * over the caller's default tenant). */
export function useMetrics() {
  return useQuery(alertMetricsQuery());
}

/** A metric's label: the translated name when the console knows it, else its key. */
export function useMetricLabel() {
  const { t, i18n } = useTranslation("alerts");
  return (metric: string) => (i18n.exists(`alerts:metric.${metric}`) ? t(`metric.${metric}`) : metric);
}

export function useUnit() {
  const { t, i18n } = useTranslation("alerts");
  return (unit: string | undefined) => (unit && i18n.exists(`alerts:unit.${unit}`) ? t(`unit.${unit}`) : (unit ?? ""));
}

export function formatValue(value: number | null | undefined): string {
  return formatNumber(value, 2);
}

export function SeverityTag({ severity }: { severity: string }) {
  const { t } = useTranslation("alerts");
  return <Tag color={SEVERITY_COLORS[severity] ?? "default"}>{t(`severity.${severity}`)}</Tag>;
}

/** A rule's state (ok / pending / firing / resolved), an event's kind or a silence's state. */
export function StateTag({ state, testId }: { state: string; testId?: string }) {
  const { t } = useTranslation("alerts");
  return (
    <Tag color={STATE_COLORS[state] ?? "default"} data-testid={testId} data-state={state}>
      {t(`state.${state}`)}
    </Tag>
  );
}

export function comparisonSymbol(comparison: string): string {
  return COMPARISONS[comparison as keyof typeof COMPARISONS] ?? comparison;
}
