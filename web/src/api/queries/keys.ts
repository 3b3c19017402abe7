// What the key factories share: how a mutation invalidates through them and
// how a predicate (the live stream, a page's reload) asks whether a cached
// query falls under a key. Pages never read `query.queryKey` themselves.
import { matchQuery, type Query, type QueryClient, type QueryKey } from "@tanstack/react-query";
import type { paths } from "../schema";

/** Whether `query` is `prefix` or lies under it (["jobs"] covers ["jobs", …]). */
export function isUnder(query: Query, prefix: QueryKey): boolean {
  return matchQuery({ queryKey: prefix }, query);
}

/** Invalidate every query under any of `prefixes` (one refetch each). */
export function invalidate(client: QueryClient, ...prefixes: QueryKey[]): Promise<void> {
  return client.invalidateQueries({ predicate: (q) => prefixes.some((p) => isUnder(q, p)) });
}

/** The query parameters of a GET path of the generated client. */
export type GetParams<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } } ? NonNullable<Q> : never;
