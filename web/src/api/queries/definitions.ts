// Process definitions: the catalog (every key, for pickers), the paged list,
// one key's versions, one version's source and the versions still running.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "../client";

export const definitionKeys = {
  all: () => ["definitions"] as const,
  catalog: () => ["definitions", "catalog"] as const,
  list: (cursor: string | null) => ["definitions", "list", cursor] as const,
  versions: (key: string) => ["definitions", "versions", key] as const,
  version: (key: string, version: number | null | undefined, tenant?: string) => ["definitions", "version", key, version, tenant ?? null] as const,
  running: (key: string) => ["definitions", "running", key] as const,
};

/** Every definition (up to 200): the pickers of the analytics and trigger pages. */
export const definitionCatalogQuery = () =>
  queryOptions({
    queryKey: definitionKeys.catalog(),
    queryFn: () => unwrap(api.GET("/api/workflows/definitions", { params: { query: { limit: 200 } } })),
  });

export const definitionsQuery = (cursor: string | null) =>
  queryOptions({
    queryKey: definitionKeys.list(cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/definitions", { params: { query: { limit: 20, cursor } } })),
  });

export const definitionVersionsQuery = (key: string) =>
  queryOptions({
    queryKey: definitionKeys.versions(key),
    queryFn: () => unwrap(api.GET("/api/workflows/definitions/{key}/versions", { params: { path: { key } } })),
  });

/** One version's source (`tenant`: the instance's, when a task shows its form). */
export const definitionVersionQuery = (key: string, version: number | null | undefined, tenant?: string) =>
  queryOptions({
    queryKey: definitionKeys.version(key, version, tenant),
    queryFn: () =>
      unwrap(api.GET("/api/workflows/definitions/{key}/versions/{version}", { params: { path: { key, version: version! }, query: tenant === undefined ? undefined : { tenant } } })),
  });

export const runningVersionsQuery = (key: string) =>
  queryOptions({
    queryKey: definitionKeys.running(key),
    queryFn: () => unwrap(api.GET("/api/workflows/definitions/{key}/versions/running", { params: { path: { key } } })),
  });
