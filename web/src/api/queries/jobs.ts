// The job ledger: runtime status, workers and paused scopes, the summary
// (all jobs or one replay batch), the list (the ledger's and the trigger
// executions'), failure clusters, one job, its trace chain and the replay
// preview. Heads ("jobs", "job", "runtime-status", …) are those the live
// stream matches (live/topics.ts).
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "../client";
import type { paths } from "../schema";

type ListParams = NonNullable<paths["/api/workflows/engine/jobs"]["get"]["parameters"]["query"]>;
/** The ledger's filters (the URL's): the API's parameters without the page. */
export type JobFilters = Omit<ListParams, "limit" | "cursor">;
export type ClusterBy = "reason" | "type" | "instance" | "trace";

export const JOBS_PAGE_SIZE = 20;

export const jobKeys = {
  runtime: () => ["runtime-status"] as const,
  workers: () => ["runtime-status", "workers"] as const,
  pauses: () => ["runtime-status", "job-pauses"] as const,
  summaries: () => ["job-summary"] as const,
  summary: () => ["job-summary", "all"] as const,
  replaySummary: (replayBatchId: string) => ["job-summary", "replay", replayBatchId] as const,
  lists: () => ["jobs"] as const,
  list: (filters: JobFilters, cursor: string | null) => ["jobs", JSON.stringify(filters), cursor] as const,
  /** The trigger executions page's list (under "jobs": the live stream reloads it too). */
  triggerList: (filters: JobFilters, cursor: string | null) => ["jobs", "triggers", JSON.stringify(filters), cursor] as const,
  clustersAll: () => ["failure-clusters"] as const,
  clusters: (by: ClusterBy, filters: JobFilters) => ["failure-clusters", by, filters] as const,
  details: () => ["job"] as const,
  detail: (id: number) => ["job", id] as const,
  chains: () => ["job-chain"] as const,
  chain: (traceId: string) => ["job-chain", traceId] as const,
  replayPreview: (instanceId: number, body: object) => ["replay-preview", instanceId, body] as const,
};

/** Every key a job action (retry, skip, cancel, batch) changes. */
export const jobActionKeys = () => [jobKeys.lists(), jobKeys.details(), jobKeys.summaries(), jobKeys.runtime(), jobKeys.clustersAll()];

export const runtimeStatusQuery = () =>
  queryOptions({ queryKey: jobKeys.runtime(), queryFn: () => unwrap(api.GET("/api/workflows/engine/jobs/runtime-status")) });

export const workersQuery = () => queryOptions({ queryKey: jobKeys.workers(), queryFn: () => unwrap(api.GET("/api/workflows/engine/workers")) });

export const jobPausesQuery = () => queryOptions({ queryKey: jobKeys.pauses(), queryFn: () => unwrap(api.GET("/api/workflows/engine/job-pauses")) });

export const jobSummaryQuery = () =>
  queryOptions({ queryKey: jobKeys.summary(), queryFn: () => unwrap(api.GET("/api/workflows/engine/jobs/summary")) });

export const replaySummaryQuery = (replayBatchId: string) =>
  queryOptions({
    queryKey: jobKeys.replaySummary(replayBatchId),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/jobs/summary", { params: { query: { replayBatchId } } })),
  });

export const jobsQuery = (filters: JobFilters, cursor: string | null) =>
  queryOptions({
    queryKey: jobKeys.list(filters, cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/jobs", { params: { query: { ...filters, limit: JOBS_PAGE_SIZE, cursor } } })),
  });

export const triggerJobsQuery = (filters: JobFilters, cursor: string | null) =>
  queryOptions({
    queryKey: jobKeys.triggerList(filters, cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/jobs", { params: { query: { ...filters, limit: JOBS_PAGE_SIZE, cursor } } })),
  });

export const clustersQuery = (by: ClusterBy, filters: JobFilters) =>
  queryOptions({
    queryKey: jobKeys.clusters(by, filters),
    queryFn: () =>
      unwrap(api.GET("/api/workflows/engine/jobs/failure-clusters", { params: { query: { ...filters, by, limit: 20, samples: 3 } } })),
  });

export const jobQuery = (id: number) =>
  queryOptions({
    queryKey: jobKeys.detail(id),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/jobs/{jobId}", { params: { path: { jobId: id } } })),
  });

export const jobChainQuery = (traceId: string) =>
  queryOptions({
    queryKey: jobKeys.chain(traceId),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/jobs/chain/{traceId}", { params: { path: { traceId } } })),
  });

/** The dry run of a replay of dead deliveries (its body: the replay's params). */
export const replayPreviewQuery = (instanceId: number, body: Record<string, unknown>) =>
  queryOptions({
    queryKey: jobKeys.replayPreview(instanceId, body),
    queryFn: () => unwrap(api.POST("/api/workflows/engine/jobs/replay-preview", { body: body as never })),
  });
