// The recorded batch operations (issue 29 item 4, SPEC O-18): the list,
// newest first (GET /engine/batches, one `kind` at most, keyset cursor), and
// one batch with its per-item results (GET /engine/batches/{batchId}). Both
// poll every 2 s while a batch they show is still running, so its progress
// is live; a finished batch never changes.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "../client";
import type { GetParams } from "./keys";

type ListParams = GetParams<"/api/workflows/engine/batches">;
/** The list's filters (the URL's): the API's parameters without the page. */
export type BatchFilters = Omit<ListParams, "limit" | "cursor">;

export const BATCHES_PAGE_SIZE = 20;
/** How often a running batch is read again (ms). */
export const BATCH_POLL_MS = 2_000;

export const batchKeys = {
  /** Every batch query: what a mutation that starts a batch invalidates. */
  all: () => ["batches"] as const,
  lists: () => ["batches", "list"] as const,
  list: (filters: BatchFilters, cursor: string | null) => ["batches", "list", JSON.stringify(filters), cursor] as const,
  details: () => ["batches", "detail"] as const,
  detail: (id: string) => ["batches", "detail", id] as const,
};

export const batchesQuery = (filters: BatchFilters, cursor: string | null) =>
  queryOptions({
    queryKey: batchKeys.list(filters, cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/batches", { params: { query: { ...filters, limit: BATCHES_PAGE_SIZE, cursor } } })),
    refetchInterval: (query) => (query.state.data?.items.some((b) => b.state === "running") ? BATCH_POLL_MS : false),
  });

export const batchQuery = (id: string) =>
  queryOptions({
    queryKey: batchKeys.detail(id),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/batches/{batchId}", { params: { path: { batchId: id } } })),
    refetchInterval: (query) => (query.state.data?.state === "running" ? BATCH_POLL_MS : false),
  });
