// The signed-in user: one key, read by the layout's header, the live stream
// and the instance list, and the reload that spares it.
import { queryOptions, type QueryClient } from "@tanstack/react-query";
import { api, unwrap } from "../client";
import { isUnder } from "./keys";

export const sessionKeys = {
  me: () => ["me"] as const,
};

/** The signed-in user (the layout's header). */
export const meQuery = () => queryOptions({ queryKey: sessionKeys.me(), queryFn: () => unwrap(api.GET("/api/workflows/me")) });

/** Reload every query but the session's (after a repair: every list that shows instances, jobs or tasks). */
export function invalidateAllButSession(client: QueryClient): Promise<void> {
  return client.invalidateQueries({ predicate: (q) => !isUnder(q, sessionKeys.me()) });
}
