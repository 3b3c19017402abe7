// The diagnostics document of one instance (every view, the conclusions and
// the verdict) as one query, and the call that reloads it after a repair.
// The query's key and options are the data layer's (api/queries/instances).
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { diagnosticsQuery } from "../../api/queries/instances";
import { invalidateAllButSession } from "../../api/queries/session";

export { diagnosticsQuery, TRACE_PAGE } from "../../api/queries/instances";

export function useDiagnostics(id: number) {
  return useQuery(diagnosticsQuery(id));
}

/** Reload the drawer (and every list that shows instances, jobs or tasks). */
export function useReload() {
  const client = useQueryClient();
  return () => invalidateAllButSession(client);
}
