// The Instances tab's boot-time prefetch (registry → main.tsx): the list, the
// status counts and the saved views start while the page's code is still
// loading, with the data layer's options (api/queries), so the first render
// finds them under the same keys.
import type { QueryClient } from "@tanstack/react-query";
import { instanceCountsQuery, instancesQuery } from "../../api/queries/instances";
import { viewsQuery } from "../../api/queries/views";
import { pageCursor } from "../../components/useListState";
import { readQuery } from "./filters";

export { instanceCountsQuery, instancesQuery } from "../../api/queries/instances";

export const instanceViewsQuery = () => viewsQuery("instances");

/** Start the tab's first-screen reads for the URL's filters and page. */
export function prefetchInstances(client: QueryClient, params: URLSearchParams): void {
  const query = readQuery(params);
  void client.prefetchQuery(instancesQuery(query, pageCursor(params)));
  void client.prefetchQuery(instanceCountsQuery(query));
  void client.prefetchQuery(instanceViewsQuery()); // (the user: main.tsx, for every page)
}
