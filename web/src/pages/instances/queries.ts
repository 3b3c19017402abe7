// The Instances tab's first-screen reads as query options, shared by the page
// and the boot-time prefetch (registry → main.tsx): the list, the status
// counts and the saved views start while the page's code is still loading.
import { queryOptions, type QueryClient } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";
import { readQuery, type InstanceQuery } from "./filters";

export const INSTANCES_PAGE_SIZE = 20;
export const VIEWS_KEY = ["views", "instances"];

export const instancesQuery = (query: InstanceQuery, cursor: string | null) =>
  queryOptions({
    queryKey: ["instances", JSON.stringify(query), cursor],
    queryFn: () =>
      unwrap(api.GET("/api/workflows/instances", { params: { query: { ...query, limit: INSTANCES_PAGE_SIZE, cursor } } })),
  });

export const instanceCountsQuery = (query: InstanceQuery) =>
  queryOptions({
    queryKey: ["instance-counts", JSON.stringify({ ...query, status: undefined })],
    queryFn: () => unwrap(api.GET("/api/workflows/instances/counts", { params: { query: { ...query, status: undefined } } })),
  });

export const instanceViewsQuery = () =>
  queryOptions({
    queryKey: VIEWS_KEY,
    queryFn: () => unwrap(api.GET("/api/workflows/views", { params: { query: { scope: "instances" } } })),
  });

/** Start the tab's first-screen reads for the URL's filters. */
export function prefetchInstances(client: QueryClient, params: URLSearchParams): void {
  const query = readQuery(params);
  void client.prefetchQuery(instancesQuery(query, null));
  void client.prefetchQuery(instanceCountsQuery(query));
  void client.prefetchQuery(instanceViewsQuery()); // (the user: main.tsx, for every page)
}
