// Durations of the analytics panels (whole milliseconds from the API) in the
// largest unit that keeps them readable: 850 ms, 12.5 s, 4.2 min, 3.1 h, 2.5 d.
import type { TFunction } from "i18next";

const UNITS: [string, number][] = [
  ["days", 86_400_000],
  ["hours", 3_600_000],
  ["minutes", 60_000],
  ["seconds", 1_000],
];

export function formatDuration(ms: number | null | undefined, t: TFunction): string {
  if (ms === null || ms === undefined) return "—";
  for (const [unit, size] of UNITS) {
    if (ms >= size) return t(`analytics:duration.${unit}`, { n: (ms / size).toLocaleString(undefined, { maximumFractionDigits: 1 }) });
  }
  return t("analytics:duration.ms", { n: Math.round(ms) });
}
