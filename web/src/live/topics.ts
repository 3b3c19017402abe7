// Which TanStack queries a change event makes stale: the runtime panel, the
// job ledger and its drawer, the engine page, the instance list and counts,
// the open instance drawer, and the health page — named by the data layer's
// key factories (api/queries), matched as key prefixes.
import type { Query, QueryKey } from "@tanstack/react-query";
import { engineKeys } from "../api/queries/engine";
import { instanceKeys } from "../api/queries/instances";
import { jobKeys } from "../api/queries/jobs";
import { isUnder } from "../api/queries/keys";
import type { Change } from "./stream";

const BY_TOPIC: Record<Change["topic"], readonly QueryKey[]> = {
  jobs: [jobKeys.runtime(), jobKeys.lists(), jobKeys.summaries(), jobKeys.clustersAll(), jobKeys.details(), jobKeys.chains(), engineKeys.diagnostics()],
  instances: [instanceKeys.lists(), instanceKeys.countsAll()],
  health: [engineKeys.inspections(), engineKeys.healthScore(), engineKeys.diagnostics()],
};
// queries of one instance: only the listed instances are reloaded
const PER_INSTANCE: ReadonlyArray<{ all: () => QueryKey; of: (id: number) => QueryKey }> = [
  { all: instanceKeys.details, of: instanceKeys.detail },
  { all: instanceKeys.diagnosticsAll, of: instanceKeys.diagnostics },
  { all: instanceKeys.traces, of: instanceKeys.tracesOf },
];

/** What gathered changes name: their topics and, per topic `instances`,
 * the instances touched (null: some instances, unnamed). */
export type Pending = { topics: Set<Change["topic"]>; instances: Set<number> | null };

export const emptyPending = (): Pending => ({ topics: new Set(), instances: new Set() });

export function gather(pending: Pending, change: Change): void {
  pending.topics.add(change.topic);
  if (change.topic !== "instances") return;
  if (change.instanceIds.length === 0) pending.instances = null;
  else change.instanceIds.forEach((id) => pending.instances?.add(id));
}

/** Every live topic at once (after a reconnect: what was missed). */
export function everything(): Pending {
  return { topics: new Set(Object.keys(BY_TOPIC) as Change["topic"][]), instances: null };
}

export function isStale(pending: Pending, query: Query): boolean {
  for (const topic of pending.topics) {
    if (BY_TOPIC[topic].some((key) => isUnder(query, key))) return true;
    if (topic !== "instances") continue;
    for (const kind of PER_INSTANCE) {
      if (!isUnder(query, kind.all())) continue;
      if (pending.instances === null) return true;
      for (const id of pending.instances) if (isUnder(query, kind.of(id))) return true;
    }
  }
  return false;
}
