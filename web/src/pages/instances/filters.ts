// The instance list's filters live in the URL (?definitionKey=…&status=…&…)
// with the API's own parameter names, so a URL, a saved view's `filters` and
// the list/counts/export query are one and the same object.
import type { Schemas } from "../../api/client";
import { withParams, type FilterSpec } from "../../components/useListState";

export type InstanceStatus = Schemas["InstanceStatus"];
export const INSTANCE_STATUSES: InstanceStatus[] = ["running", "suspended", "approved", "rejected", "withdrawn", "canceled"];

const TEXT_KEYS = [
  "definitionKey",
  "initiator",
  "createdFrom",
  "createdTo",
  "finishedFrom",
  "finishedTo",
  "currentNode",
  "currentAssignee",
  "keyword",
] as const;
const NUMBER_KEYS = ["definitionVersion", "stuckMinutes"] as const;
type TextKey = (typeof TEXT_KEYS)[number];
type NumberKey = (typeof NUMBER_KEYS)[number];

/** The deadline filter's values: a pending task due soon, overdue or escalated. */
export type DeadlineFilter = "due_soon" | "overdue" | "escalated";
export const DEADLINE_FILTERS: DeadlineFilter[] = ["due_soon", "overdue", "escalated"];

export type InstanceQuery = Partial<Record<TextKey, string>> &
  Partial<Record<NumberKey, number>> & { status?: InstanceStatus[]; hasError?: boolean; deadline?: DeadlineFilter };

/** Every URL parameter that is a filter (others — `instance`, `view` — are not). */
export const FILTER_PARAMS: string[] = [...TEXT_KEYS, ...NUMBER_KEYS, "status", "hasError", "deadline"];
/** The same for components/useListState: `status` has several values. */
export const INSTANCE_FILTERS: FilterSpec = Object.fromEntries(FILTER_PARAMS.map((k) => [k, k === "status" ? "many" : "one"]));

function isStatus(value: unknown): value is InstanceStatus {
  return (INSTANCE_STATUSES as unknown[]).includes(value);
}

/** A query from loose values (URL text or a saved view's JSON); bad values are dropped. */
export function normalize(source: (key: string) => unknown, statuses: unknown[]): InstanceQuery {
  const q: InstanceQuery = {};
  for (const key of TEXT_KEYS) {
    const v = source(key);
    if (typeof v === "string" && v.trim()) q[key] = v.trim();
  }
  for (const key of NUMBER_KEYS) {
    const v = Number(source(key));
    if (source(key) != null && source(key) !== "" && Number.isInteger(v) && v > 0) q[key] = v;
  }
  const status = statuses.flatMap((s) => (typeof s === "string" ? s.split(",") : [])).filter(isStatus);
  if (status.length) q.status = [...new Set(status)];
  const err = source("hasError");
  if (err === true || err === "true") q.hasError = true;
  if (err === false || err === "false") q.hasError = false;
  const deadline = source("deadline");
  if ((DEADLINE_FILTERS as unknown[]).includes(deadline)) q.deadline = deadline as DeadlineFilter;
  return q;
}

export function readQuery(params: URLSearchParams): InstanceQuery {
  return normalize((k) => params.get(k), params.getAll("status"));
}

export function fromView(filters: Record<string, unknown>): InstanceQuery {
  const status = filters.status;
  return normalize((k) => filters[k], Array.isArray(status) ? status : status == null ? [] : [status]);
}

export function hasFilters(params: URLSearchParams): boolean {
  return FILTER_PARAMS.some((k) => params.has(k));
}

/** The query as the API's query string (list, counts and export take the same). */
export function toSearch(q: InstanceQuery, extra: Record<string, string> = {}): string {
  return withParams(new URLSearchParams(), { ...q, ...extra }).toString();
}

/** How many instances match `q`: the counts ignore `status`, so add up the chosen ones. */
export function matching(counts: Schemas["InstanceCounts"] | undefined, q: InstanceQuery): number | undefined {
  if (!counts) return undefined;
  if (!q.status?.length) return counts.total;
  return q.status.reduce((sum, s) => sum + (counts.counts[s] ?? 0), 0);
}
