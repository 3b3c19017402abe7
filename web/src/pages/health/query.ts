// The health inspection's filters live in the URL (?threshold=…&rule=…&level=…)
// so an inspection can be shared and a saved view (scope "health") can pin them.
// Also: the repair each problem suggests (SPEC O-16) — an engine recovery action
// (a link to the engine tab with that action's filters) or the instance drawer.
import type { Schemas } from "../../api/client";
import type { paths } from "../../api/schema";
import type { TFunction } from "i18next";
import { RECOVERY_ACTIONS, recoveryHref, type RecoveryAction } from "../engine/recoveryQuery";

type InspectionQuery = NonNullable<paths["/api/workflows/engine/health-inspection"]["get"]["parameters"]["query"]>;
export type Rule = NonNullable<InspectionQuery["rule"]>;
export type Level = "critical" | "warning";

const LEVELS: Level[] = ["critical", "warning"];
const RULE_CODE = /^[a-z_]{1,64}$/;
/** The threshold choices, 10 minutes to 1 day (the API's bounds). */
export const THRESHOLDS = [10, 15, 30, 60, 120, 240, 480, 720, 1440];
export const DEFAULT_THRESHOLD = 30;

/** "30 min", "2 h", "1 d" in the active language. */
export function thresholdLabel(t: TFunction, minutes: number): string {
  if (minutes % 1440 === 0) return t("health:threshold.days", { n: minutes / 1440 });
  if (minutes % 60 === 0) return t("health:threshold.hours", { n: minutes / 60 });
  return t("health:threshold.minutes", { n: minutes });
}

export interface HealthQuery {
  thresholdMinutes: number;
  rule?: Rule;
  level?: Level;
}

export function readHealthQuery(params: URLSearchParams): HealthQuery {
  const threshold = Number(params.get("threshold"));
  const rule = params.get("rule") as Rule | null;
  const level = params.get("level") as Level | null;
  return {
    thresholdMinutes: Number.isInteger(threshold) && threshold >= 10 && threshold <= 1440 ? threshold : DEFAULT_THRESHOLD,
    // a rule the API does not know is its 422, shown on the page
    rule: rule && RULE_CODE.test(rule) ? rule : undefined,
    level: level && LEVELS.includes(level) ? level : undefined,
  };
}

export function writeHealthQuery(q: HealthQuery, extra: Record<string, string> = {}): URLSearchParams {
  const params = new URLSearchParams();
  if (q.thresholdMinutes !== DEFAULT_THRESHOLD) params.set("threshold", String(q.thresholdMinutes));
  if (q.rule) params.set("rule", q.rule);
  if (q.level) params.set("level", q.level);
  for (const [k, v] of Object.entries(extra)) if (v) params.set(k, v);
  return params;
}

/** The saved view's filters of a query (the keys of HealthViewFilters). */
export function viewFilters(q: HealthQuery): Record<string, unknown> {
  return { thresholdMinutes: q.thresholdMinutes, ...(q.rule ? { rule: q.rule } : {}), ...(q.level ? { level: q.level } : {}) };
}

export function queryOfView(filters: Record<string, unknown>): HealthQuery {
  const params = new URLSearchParams();
  for (const [key, name] of [["thresholdMinutes", "threshold"], ["rule", "rule"], ["level", "level"]] as const) {
    const v = filters[key];
    if (v !== undefined && v !== null) params.set(name, String(v));
  }
  return readHealthQuery(params);
}

export type Repair = { kind: "recovery"; action: RecoveryAction; href: string } | { kind: "instance"; instanceId: number } | { kind: "none" };

/** The repair a problem suggests: the recovery action its suggestion names
 * (recoveryAction, from the API) or, without one, the instance's drawer. */
export function repairOf(item: Schemas["HealthItem"]): Repair {
  const action = RECOVERY_ACTIONS.find((a) => a === item.recoveryAction);
  if (action) return { kind: "recovery", action, href: recoveryHref(action, { instanceId: item.instanceId ?? undefined }) };
  if (item.instanceId != null) return { kind: "instance", instanceId: item.instanceId };
  return { kind: "none" };
}
