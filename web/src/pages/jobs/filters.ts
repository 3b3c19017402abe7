// The ledger's filters live in the URL (?type=…&status=…&instanceId=…&keyword=…)
// so a view can be shared; components/useListState reads and writes them.
import type { Schemas } from "../../api/client";
import type { FilterValues } from "../../components/useListState";

export type JobStatus = Schemas["JobStatus"];
export const JOB_STATUSES: JobStatus[] = ["pending", "running", "paused", "succeeded", "failed", "dead", "canceled"];

/** The ledger's filter parameters (components/useListState). */
export const JOB_FILTERS = {
  type: "many",
  status: "many",
  instanceId: "one",
  keyword: "one",
  traceId: "one",
  fingerprint: "one",
  replayBatchId: "one",
} as const;

export type JobQuery = {
  type?: string[];
  status?: JobStatus[];
  instanceId?: number;
  keyword?: string;
  traceId?: string;
  fingerprint?: string;
  replayBatchId?: string;
};

/** The query of the URL's filter values (bad values dropped); its keys are
 * the parameters' names, so the page writes it back as it is. */
export function readQuery(v: FilterValues<typeof JOB_FILTERS>): JobQuery {
  const q: JobQuery = {};
  if (v.type.length) q.type = v.type;
  const statuses = v.status.filter((s): s is JobStatus => (JOB_STATUSES as string[]).includes(s));
  if (statuses.length) q.status = statuses;
  const instance = Number(v.instanceId);
  if (Number.isInteger(instance) && instance > 0) q.instanceId = instance;
  for (const key of ["keyword", "traceId", "fingerprint", "replayBatchId"] as const) if (v[key]) q[key] = v[key];
  return q;
}
