// Instances: the list, its status counts, one instance, its diagnostics
// document and trace pages, and the previews of the actions taken on them
// (recovery, force jump, scope suspend/cancel). Keys keep their heads
// ("instances", "instance-counts", "instance", …): the live stream matches
// them (live/topics.ts).
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "../client";
import type { paths } from "../schema";
import type { Diagnostics, Trace } from "../diagnosticsDocument";

type ListParams = NonNullable<paths["/api/workflows/instances"]["get"]["parameters"]["query"]>;
/** The list's filters (the URL's, a saved view's): the API's parameters without the page. */
export type InstanceFilters = Omit<ListParams, "limit" | "cursor">;
type ScopeBody = paths["/api/workflows/instances/scope-preview"]["post"]["requestBody"]["content"]["application/json"];
type RecoveryAction = paths["/api/workflows/engine/recovery/{action}/preview"]["post"]["parameters"]["path"]["action"];

export const INSTANCES_PAGE_SIZE = 20;
/** The first trace page, inside the diagnostics document. */
export const TRACE_PAGE = 50;

const countsFilter = (filters: InstanceFilters) => ({ ...filters, status: undefined });

export const instanceKeys = {
  lists: () => ["instances"] as const,
  list: (filters: InstanceFilters, cursor: string | null) => ["instances", JSON.stringify(filters), cursor] as const,
  countsAll: () => ["instance-counts"] as const,
  counts: (filters: InstanceFilters) => ["instance-counts", JSON.stringify(countsFilter(filters))] as const,
  /** The batch-recover dialog's count of matching running instances. */
  recoverCount: (filters: InstanceFilters) => ["instance-counts", "recover", JSON.stringify(filters)] as const,
  details: () => ["instance"] as const,
  detail: (id: number) => ["instance", id] as const,
  diagnosticsAll: () => ["instance-diagnostics"] as const,
  diagnostics: (id: number) => ["instance-diagnostics", id] as const,
  traces: () => ["instance-trace"] as const,
  /** Every trace page of one instance. */
  tracesOf: (id: number) => ["instance-trace", id] as const,
  trace: (id: number, cursor: string | null, kind: string | undefined) => ["instance-trace", id, cursor, kind] as const,
  recoveryPreview: (action: string, instanceId: number) => ["recovery-preview", action, instanceId] as const,
  forceJumpPreview: (id: number, target: string | null | undefined, fromNode: string | undefined) => ["force-jump-preview", id, target, fromNode] as const,
  scopePreviews: () => ["scope-preview"] as const,
  scopePreview: (action: string, scope: object) => ["scope-preview", action, scope] as const,
};

export const instancesQuery = (filters: InstanceFilters, cursor: string | null) =>
  queryOptions({
    queryKey: instanceKeys.list(filters, cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/instances", { params: { query: { ...filters, limit: INSTANCES_PAGE_SIZE, cursor } } })),
  });

export const instanceCountsQuery = (filters: InstanceFilters) =>
  queryOptions({
    queryKey: instanceKeys.counts(filters),
    queryFn: () => unwrap(api.GET("/api/workflows/instances/counts", { params: { query: countsFilter(filters) } })),
  });

export const recoverCountQuery = (filters: InstanceFilters) =>
  queryOptions({
    queryKey: instanceKeys.recoverCount(filters),
    queryFn: () => unwrap(api.GET("/api/workflows/instances/counts", { params: { query: countsFilter(filters) } })),
  });

export const instanceQuery = (id: number) =>
  queryOptions({
    queryKey: instanceKeys.detail(id),
    queryFn: () => unwrap(api.GET("/api/workflows/instances/{instanceId}", { params: { path: { instanceId: id } } })),
  });

export const diagnosticsQuery = (id: number) =>
  queryOptions({
    queryKey: instanceKeys.diagnostics(id),
    queryFn: async () =>
      (await unwrap(
        api.GET("/api/workflows/instances/{instanceId}/diagnostics", { params: { path: { instanceId: id }, query: { limit: TRACE_PAGE } } }),
      )) as unknown as Diagnostics,
  });

type TraceKind = NonNullable<NonNullable<paths["/api/workflows/instances/{instanceId}/diagnostics"]["get"]["parameters"]["query"]>["kind"]>;

/** A further trace page (or a filtered one), after the diagnostics document's first. */
export const traceQuery = (id: number, cursor: string | null, kind: TraceKind | undefined) =>
  queryOptions({
    queryKey: instanceKeys.trace(id, cursor, kind),
    queryFn: async () =>
      ((await unwrap(
        api.GET("/api/workflows/instances/{instanceId}/diagnostics", { params: { path: { instanceId: id }, query: { view: "trace", limit: TRACE_PAGE, cursor, kind } } }),
      )) as unknown as { trace: Trace }).trace,
  });

export const recoveryPreviewQuery = (action: RecoveryAction, instanceId: number) =>
  queryOptions({
    queryKey: instanceKeys.recoveryPreview(action, instanceId),
    queryFn: () => unwrap(api.POST("/api/workflows/engine/recovery/{action}/preview", { params: { path: { action } }, body: { instanceId } as never })),
  });

export const forceJumpPreviewQuery = (id: number, target: string | null | undefined, fromNode: string | undefined) =>
  queryOptions({
    queryKey: instanceKeys.forceJumpPreview(id, target, fromNode),
    queryFn: () =>
      unwrap(api.GET("/api/workflows/instances/{instanceId}/force-jump/preview", { params: { path: { instanceId: id }, query: { target: target!, fromNode } } })),
  });

export const scopePreviewQuery = (action: ScopeBody["action"], scope: Omit<ScopeBody, "action">) =>
  queryOptions({
    queryKey: instanceKeys.scopePreview(action, scope),
    queryFn: () => unwrap(api.POST("/api/workflows/instances/scope-preview", { body: { ...scope, action } })),
  });
