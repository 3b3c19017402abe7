// The diagnostics document of one instance (every view, the conclusions and
// the verdict) as one query, and the call that reloads it after a repair.
import { queryOptions, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";
import type { Diagnostics } from "./types";

export const TRACE_PAGE = 50;

export function diagnosticsKey(id: number) {
  return ["instance-diagnostics", id];
}

export const diagnosticsQuery = (id: number) =>
  queryOptions({
    queryKey: diagnosticsKey(id),
    queryFn: async () =>
      (await unwrap(
        api.GET("/api/workflows/instances/{instanceId}/diagnostics", { params: { path: { instanceId: id }, query: { limit: TRACE_PAGE } } }),
      )) as unknown as Diagnostics,
  });

export function useDiagnostics(id: number) {
  return useQuery(diagnosticsQuery(id));
}

/** Reload the drawer (and every list that shows instances, jobs or tasks). */
export function useReload() {
  const client = useQueryClient();
  return () => client.invalidateQueries({ predicate: (q) => q.queryKey[0] !== "me" });
}
