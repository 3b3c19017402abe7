// The ledger's filters live in the URL (?type=…&status=…&instanceId=…&keyword=…)
// so a view can be shared.
import type { Schemas } from "../../api/client";

export type JobStatus = Schemas["JobStatus"];
export const JOB_STATUSES: JobStatus[] = ["pending", "running", "paused", "succeeded", "failed", "dead", "canceled"];

export interface JobQuery {
  type?: string[];
  status?: JobStatus[];
  instanceId?: number;
  keyword?: string;
  traceId?: string;
  fingerprint?: string;
  replayBatchId?: string;
}

export function readQuery(params: URLSearchParams): JobQuery {
  const q: JobQuery = {};
  const types = params.getAll("type");
  if (types.length) q.type = types;
  const statuses = params.getAll("status").filter((s): s is JobStatus => (JOB_STATUSES as string[]).includes(s));
  if (statuses.length) q.status = statuses;
  const instance = Number(params.get("instanceId"));
  if (Number.isInteger(instance) && instance > 0) q.instanceId = instance;
  for (const key of ["keyword", "traceId", "fingerprint", "replayBatchId"] as const) {
    const v = params.get(key);
    if (v) q[key] = v;
  }
  return q;
}

export function writeQuery(q: JobQuery, extra: Record<string, string> = {}): URLSearchParams {
  const params = new URLSearchParams();
  q.type?.forEach((v) => params.append("type", v));
  q.status?.forEach((v) => params.append("status", v));
  if (q.instanceId) params.set("instanceId", String(q.instanceId));
  for (const key of ["keyword", "traceId", "fingerprint", "replayBatchId"] as const) {
    const v = q[key];
    if (v) params.set(key, v);
  }
  for (const [k, v] of Object.entries(extra)) if (v) params.set(k, v);
  return params;
}
