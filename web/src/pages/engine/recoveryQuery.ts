// The targeted recovery actions (SPEC O-18) and their filters in the URL of
// the engine tab (?action=…&instanceId=…&minAgeMinutes=…&limit=…), so the
// health inspection can link to an action with its filters pre-filled.
export const RECOVERY_ACTIONS = [
  "event-dispatch",
  "trigger-dispatch",
  "delay-wake",
  "task-timeout",
  "subprocess",
  "webhook-delivery",
  "external-dispatch",
] as const;
export type RecoveryAction = (typeof RECOVERY_ACTIONS)[number];

export const ENGINE_PATH = "/monitor/engine";

export interface RecoveryFilter {
  instanceId?: number;
  minAgeMinutes?: number;
  limit?: number;
  ratePerSecond?: number;
}

const KEYS = ["instanceId", "minAgeMinutes", "limit", "ratePerSecond"] as const;

export function readRecovery(params: URLSearchParams): { action: RecoveryAction; filter: RecoveryFilter } {
  const raw = params.get("action") as RecoveryAction | null;
  const action = raw && RECOVERY_ACTIONS.includes(raw) ? raw : RECOVERY_ACTIONS[0];
  const filter: RecoveryFilter = {};
  for (const key of KEYS) {
    const v = Number(params.get(key));
    if (params.get(key) && Number.isInteger(v) && v >= 0) filter[key] = v;
  }
  return { action, filter };
}

export function recoveryHref(action: RecoveryAction, filter: RecoveryFilter = {}): string {
  const params = new URLSearchParams({ action });
  for (const key of KEYS) if (filter[key] !== undefined) params.set(key, String(filter[key]));
  return `${ENGINE_PATH}?${params.toString()}#recovery`;
}
