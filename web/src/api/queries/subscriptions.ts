// Event subscriptions: the paged list and one subscription's hits by status.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "../client";
import type { GetParams } from "./keys";

export type HitStatus = NonNullable<GetParams<"/api/workflows/subscriptions/{subscriptionId}/hits">["status"]>;

export const subscriptionKeys = {
  lists: () => ["subscriptions"] as const,
  list: (cursor: string | null) => ["subscriptions", cursor] as const,
  hits: (id: number, status: HitStatus | undefined, cursor: string | null) => ["hits", id, status, cursor] as const,
};

export const subscriptionsQuery = (cursor: string | null) =>
  queryOptions({
    queryKey: subscriptionKeys.list(cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/subscriptions", { params: { query: { limit: 20, cursor } } })),
  });

export const hitsQuery = (id: number, status: HitStatus | undefined, cursor: string | null) =>
  queryOptions({
    queryKey: subscriptionKeys.hits(id, status, cursor),
    queryFn: () =>
      unwrap(api.GET("/api/workflows/subscriptions/{subscriptionId}/hits", { params: { path: { subscriptionId: id }, query: { status, limit: 20, cursor } } })),
  });
