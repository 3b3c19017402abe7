// Which TanStack queries a change event makes stale: the runtime panel, the
// job ledger and its drawer, the engine page, the instance list and counts,
// the open instance drawer, and the health page (the keys their pages use).
import type { Query } from "@tanstack/react-query";
import type { Change } from "./stream";

const BY_TOPIC: Record<Change["topic"], readonly string[]> = {
  jobs: ["runtime-status", "jobs", "job-summary", "failure-clusters", "job", "job-chain", "engine-diagnostics"],
  instances: ["instances", "instance-counts", "instance", "instance-diagnostics", "instance-trace"],
  health: ["health-inspection", "health-score", "engine-diagnostics"],
};
// queries of one instance: only the listed instances are reloaded
const PER_INSTANCE = new Set(["instance", "instance-diagnostics", "instance-trace"]);

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
  const head = String(query.queryKey[0]);
  for (const topic of pending.topics) {
    if (!BY_TOPIC[topic].includes(head)) continue;
    if (topic !== "instances" || !PER_INSTANCE.has(head) || pending.instances === null) return true;
    if (pending.instances.has(Number(query.queryKey[1]))) return true;
  }
  return false;
}
