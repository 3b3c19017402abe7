// Saved views: one list per scope (the instance list's, the health
// inspection's).
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "../client";
import type { GetParams } from "./keys";

export type ViewScope = NonNullable<GetParams<"/api/workflows/views">["scope"]>;

export const viewKeys = {
  all: () => ["views"] as const,
  list: (scope: ViewScope) => ["views", scope] as const,
};

export const viewsQuery = (scope: ViewScope) =>
  queryOptions({
    queryKey: viewKeys.list(scope),
    queryFn: () => unwrap(api.GET("/api/workflows/views", { params: { query: { scope } } })),
  });
