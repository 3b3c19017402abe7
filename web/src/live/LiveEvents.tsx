// The tab's one change stream (issue 33 item 2), mounted at the root of the
// signed-in console: it reads the API's change events and marks the queries
// they concern stale (gathered for DEBOUNCE_MS, then one invalidation), so
// open pages reload what changed without polling for it. While the stream is
// down the pages poll as before; while it is up and hears every process
// (scope "database"), they poll only every LIVE_POLL_MS as a safety net.
// Only callers who may read the monitor pages open it.
import { useEffect, useRef, useState, type ReactNode } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { meQuery } from "../api/queries/session";
import { LiveContext, type LiveState } from "./context";
import { readChanges, StreamEnded, type Change } from "./stream";
import { emptyPending, everything, gather, isStale, type Pending } from "./topics";

const DEBOUNCE_MS = 150;
const MONITOR = "workflow:instance:monitor";
// failed attempts in a row before the indicator says "polling" instead of "reconnecting"
const FAILURES_BEFORE_POLLING = 3;

export function LiveEventsProvider({ children }: { children: ReactNode }) {
  const client = useQueryClient();
  const me = useQuery(meQuery());
  const allowed = me.data?.permissions.includes(MONITOR) ?? false;
  const [state, setState] = useState<LiveState>({ status: "polling", scope: null });
  const pending = useRef<Pending>(emptyPending());
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  useEffect(() => {
    if (!allowed) return;
    const abort = new AbortController();
    const flush = () => {
      timer.current = undefined;
      const gathered = pending.current;
      pending.current = emptyPending();
      void client.invalidateQueries({ predicate: (q) => isStale(gathered, q) });
    };
    const schedule = (add: (p: Pending) => void) => {
      add(pending.current);
      if (timer.current === undefined) timer.current = setTimeout(flush, DEBOUNCE_MS);
    };
    void (async () => {
      let failures = 0;
      let connectedBefore = false;
      while (!abort.signal.aborted) {
        try {
          await readChanges(abort.signal, {
            onHello: (hello) => {
              // back after a drop: what changed meanwhile was not heard
              if (connectedBefore) schedule((p) => Object.assign(p, everything()));
              connectedBefore = true;
              failures = 0;
              setState({ status: "live", scope: hello.scope });
            },
            onChange: (change: Change) => schedule((p) => gather(p, change)),
          });
        } catch (error) {
          if (abort.signal.aborted) return;
          failures += 1;
          const refused = error instanceof StreamEnded && error.reason === "refused";
          setState({ status: refused || failures >= FAILURES_BEFORE_POLLING ? "polling" : "reconnecting", scope: null });
          const delay = refused ? 60_000 : Math.min(1_000 * 2 ** (failures - 1), 15_000);
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
    })();
    return () => {
      abort.abort();
      clearTimeout(timer.current);
      timer.current = undefined;
    };
  }, [allowed, client]);

  return <LiveContext.Provider value={allowed ? state : { status: "polling", scope: null }}>{children}</LiveContext.Provider>;
}
