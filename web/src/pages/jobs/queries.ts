// The job ledger's boot-time prefetch (registry → main.tsx): every read of
// the first screen starts while the page's code is still loading, with the
// data layer's options (api/queries/jobs) — the same keys, so the first
// render finds the data instead of asking for it.
import type { QueryClient } from "@tanstack/react-query";
import { clustersQuery, jobSummaryQuery, jobsQuery, runtimeStatusQuery, workersQuery, type ClusterBy } from "../../api/queries/jobs";
import { pageCursor, readFilters } from "../../components/useListState";
import { JOB_FILTERS, readQuery } from "./filters";

export { clustersQuery, jobSummaryQuery, jobsQuery, runtimeStatusQuery, workersQuery, type ClusterBy } from "../../api/queries/jobs";

/** Start every read of the ledger's first screen for the URL's filters and page. */
export function prefetchJobLedger(client: QueryClient, params: URLSearchParams): void {
  const query = readQuery(readFilters(JOB_FILTERS, params));
  const by = (params.get("by") as ClusterBy | null) ?? "reason";
  for (const options of [runtimeStatusQuery(), workersQuery(), jobSummaryQuery(), jobsQuery(query, pageCursor(params)), clustersQuery(by, query)]) {
    void client.prefetchQuery(options as Parameters<QueryClient["prefetchQuery"]>[0]);
  }
}
