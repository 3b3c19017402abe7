// The health inspection's filters live in the URL (?threshold=…&rule=…&level=…)
// so an inspection can be shared and a saved view (scope "health") can pin them.
// Also: the repair each problem suggests (SPEC O-16) — an engine recovery action
// (a link to the engine tab with that action's filters) or the instance drawer.
import type { Schemas } from "../../api/client";
import type { paths } from "../../api/schema";
import type { TFunction } from "i18next";
import type { FilterValues, ParamChanges } from "../../components/useListState";
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

/** The inspection's filter parameters (components/useListState). */
export const HEALTH_FILTERS = { threshold: "one", rule: "one", level: "one" } as const;

export function readHealthQuery(v: FilterValues<typeof HEALTH_FILTERS>): HealthQuery {
  const threshold = Number(v.threshold);
  const rule = v.rule as Rule | undefined;
  const level = v.level as Level | undefined;
  return {
    thresholdMinutes: Number.isInteger(threshold) && threshold >= 10 && threshold <= 1440 ? threshold : DEFAULT_THRESHOLD,
    // a rule the API does not know is its 422, shown on the page
    rule: rule && RULE_CODE.test(rule) ? rule : undefined,
    level: level && LEVELS.includes(level) ? level : undefined,
  };
}

/** The URL's filter parameters of a query (the default threshold is none). */
export function writeHealthQuery(q: HealthQuery): ParamChanges {
  return { threshold: q.thresholdMinutes === DEFAULT_THRESHOLD ? null : q.thresholdMinutes, rule: q.rule, level: q.level };
}

/** The saved view's filters of a query (the keys of HealthViewFilters). */
export function viewFilters(q: HealthQuery): Record<string, unknown> {
  return { thresholdMinutes: q.thresholdMinutes, ...(q.rule ? { rule: q.rule } : {}), ...(q.level ? { level: q.level } : {}) };
}

export function queryOfView(filters: Record<string, unknown>): HealthQuery {
  const text = (v: unknown) => (v === undefined || v === null ? undefined : String(v));
  return readHealthQuery({ threshold: text(filters.thresholdMinutes), rule: text(filters.rule), level: text(filters.level) });
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
