// The job ledger's reads as query options: used by the page and its panels,
// and by the boot-time prefetch (registry → main.tsx), which starts them
// while the page's code is still loading — the same keys, so the first
// render finds the data instead of asking for it.
import { queryOptions, type QueryClient } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";
import { readQuery, type JobQuery } from "./filters";

export type ClusterBy = "reason" | "type" | "instance" | "trace";
export const JOBS_PAGE_SIZE = 20;

export const runtimeStatusQuery = () =>
  queryOptions({ queryKey: ["runtime-status"], queryFn: () => unwrap(api.GET("/api/workflows/engine/jobs/runtime-status")) });

export const workersQuery = () =>
  queryOptions({ queryKey: ["runtime-status", "workers"], queryFn: () => unwrap(api.GET("/api/workflows/engine/workers")) });

export const jobSummaryQuery = () =>
  queryOptions({ queryKey: ["job-summary", "all"], queryFn: () => unwrap(api.GET("/api/workflows/engine/jobs/summary")) });

export const jobsQuery = (query: JobQuery, cursor: string | null) =>
  queryOptions({
    queryKey: ["jobs", JSON.stringify(query), cursor],
    queryFn: () => unwrap(api.GET("/api/workflows/engine/jobs", { params: { query: { ...query, limit: JOBS_PAGE_SIZE, cursor } } })),
  });

export const clustersQuery = (by: ClusterBy, query: JobQuery) =>
  queryOptions({
    queryKey: ["failure-clusters", by, query],
    queryFn: () =>
      unwrap(api.GET("/api/workflows/engine/jobs/failure-clusters", { params: { query: { ...query, by, limit: 20, samples: 3 } } })),
  });

/** Start every read of the ledger's first screen for the URL's filters. */
export function prefetchJobLedger(client: QueryClient, params: URLSearchParams): void {
  const query = readQuery(params);
  const by = (params.get("by") as ClusterBy | null) ?? "reason";
  for (const options of [runtimeStatusQuery(), workersQuery(), jobSummaryQuery(), jobsQuery(query, null), clustersQuery(by, query)]) {
    void client.prefetchQuery(options as Parameters<QueryClient["prefetchQuery"]>[0]);
  }
}
