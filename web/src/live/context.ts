// The live stream's state as the console reads it: the header's indicator
// (live / reconnecting / polling) and the pages' polling intervals.
import { createContext, useContext } from "react";
import type { LiveScope } from "./stream";

export type LiveStatus = "live" | "reconnecting" | "polling";
export type LiveState = { status: LiveStatus; scope: LiveScope | null };

export const LiveContext = createContext<LiveState>({ status: "polling", scope: null });

/** How often a live page still polls while the stream hears every process. */
export const LIVE_POLL_MS = 30_000;

export function useLive(): LiveState {
  return useContext(LiveContext);
}

/** A page's `refetchInterval`: `ms` while the stream is down or hears only
 * this server process (SQLite: a worker elsewhere is not heard), else the
 * longer safety-net interval. */
export function useLiveInterval(ms: number): number {
  const { status, scope } = useLive();
  return status === "live" && scope === "database" ? Math.max(ms, LIVE_POLL_MS) : ms;
}
