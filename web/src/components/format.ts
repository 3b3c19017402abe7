// Dates are shown in the browser's time zone (dayjs parses the API's ISO
// timestamps with their offset and formats them locally).
import dayjs from "dayjs";
import type { TFunction } from "i18next";

export function formatTime(value: string | null | undefined): string {
  if (!value) return "—";
  return dayjs(value).format("YYYY-MM-DD HH:mm:ss");
}

export function formatJson(value: unknown): string {
  if (value === null || value === undefined) return "—";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}

/** "45 min", "3 h", "2 d": the API's rounding of an age in whole minutes
 * (health_messages.age_text), worded by the keys `${prefix}.minutes|hours|days`. */
export function ageLabel(t: TFunction, minutes: number, prefix: string): string {
  if (minutes < 60) return t(`${prefix}.minutes`, { n: Math.max(1, minutes) });
  if (minutes < 1440) return t(`${prefix}.hours`, { n: Math.floor(minutes / 60) });
  return t(`${prefix}.days`, { n: Math.floor(minutes / 1440) });
}
