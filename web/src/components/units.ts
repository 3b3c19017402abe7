// Units people read (issue 31 item 5): every duration, rate, count and size
// the console shows goes through this module; the API keeps raw numbers
// (milliseconds, seconds, per-second rates, bytes) and the console words
// them here, in the active i18n language.
//
// - formatNumber / formatCount: Intl.NumberFormat of the active language
//   (grouping: 12,345 in both zh-CN and en).
// - formatDuration(ms): the two most significant units, the second rounded
//   and dropped when it is 0 — "350 ms", "2.5 s", "1 min 5 s", "1 h 30 min",
//   "3 d 4 h"; below a minute one unit with at most one decimal.
// - formatRate(perSecond): per second from 1/s, else per minute, else per
//   hour — "12.5 /s", "3 /min", "2 /h".
// - formatBytes(bytes): B, KB, MB, GB (1 KB = 1,024 B), one decimal.
//
// The unit words are common:unit.* in web/src/locales. zh-CN uses the full
// words the console already uses elsewhere (毫秒 / 秒 / 分钟 / 小时 / 天,
// "1 小时 30 分钟", a space between number and unit as in the other zh-CN
// strings) rather than the clipped 分 / 时, which read ambiguously (分 is
// also "points" and "cents"); rates are 次/秒, 次/分钟, 次/小时 ("times per").
import i18n from "../i18n";

const formats = new Map<string, Intl.NumberFormat>();

function numberFormat(digits: number): Intl.NumberFormat {
  const lang = i18n.language || "en";
  const key = `${lang}|${digits}`;
  let format = formats.get(key);
  if (!format) {
    format = new Intl.NumberFormat(lang, { maximumFractionDigits: digits });
    formats.set(key, format);
  }
  return format;
}

/** A number in the active language, grouped, with at most `digits` decimals; "—" for none. */
export function formatNumber(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  return numberFormat(digits).format(value);
}

/** A count, grouped in the active language (12,345). */
export function formatCount(value: number | null | undefined): string {
  return formatNumber(value, 0);
}

function unit(key: string, value: number, digits = 0): string {
  return i18n.t(`common:unit.${key}`, { n: numberFormat(digits).format(value) });
}

// largest first; each step's size in milliseconds
const STEPS: [string, number][] = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["min", 60_000],
  ["s", 1_000],
];

/** A duration of `ms` milliseconds in at most two units ("1 h 30 min"). */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms < 0) return `-${formatDuration(-ms)}`;
  if (ms === 0) return unit("s", 0); // nothing to wait: "0 s" reads better than "0 ms"
  if (ms < 999.5) return unit("ms", ms < 10 ? Math.round(ms * 10) / 10 : Math.round(ms), 1);
  if (ms < 59_950) return unit("s", Math.round(ms / 100) / 10, 1);
  // the largest step the duration fills, then whole units of the next one
  let i = Math.min(STEPS.findIndex(([, size]) => ms >= size), STEPS.length - 2);
  for (;;) {
    const [major, size] = STEPS[i];
    const [minor, minorSize] = STEPS[i + 1];
    const total = Math.round(ms / minorSize);
    const whole = Math.floor((total * minorSize) / size);
    // 59 min 59.6 s rounds to 60 min: say 1 h
    if (i > 0 && whole * size >= STEPS[i - 1][1]) {
      i -= 1;
      continue;
    }
    const rest = total - (whole * size) / minorSize;
    const first = unit(major, whole);
    return rest ? `${first} ${unit(minor, rest)}` : first;
  }
}

/** A rate given per second, in the unit that keeps it ≥ 1 ("12.5 /s", "3 /min"). */
export function formatRate(perSecond: number | null | undefined): string {
  if (perSecond === null || perSecond === undefined || !Number.isFinite(perSecond)) return "—";
  if (perSecond === 0 || perSecond >= 1) return unit("perSecond", perSecond, 1);
  if (perSecond * 60 >= 1) return unit("perMinute", perSecond * 60, 1);
  return unit("perHour", perSecond * 3600, 1);
}

const SIZES = ["B", "KB", "MB", "GB"];

/** A size in bytes in the largest binary unit it fills ("1.5 MB"). */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "—";
  let i = 0;
  let value = bytes;
  while (value >= 1024 && i < SIZES.length - 1) {
    value /= 1024;
    i += 1;
  }
  return unit(SIZES[i], value, i === 0 ? 0 : 1);
}
