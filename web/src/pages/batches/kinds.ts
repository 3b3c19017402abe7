// The kinds of recorded batch operations (flowledger.ops.batch's callers):
// what the kind filter offers, grouped as the console's pages are, what an
// item's key names (a job, an instance, a retention policy's table) and
// whether the batch's jobs carry its id as their replay batch id (the job
// ledger filters by it: ?replayBatchId=).
import { RECOVERY_ACTIONS } from "../engine/recoveryQuery";

export const KIND_GROUPS: { group: string; kinds: string[] }[] = [
  { group: "jobs", kinds: ["job.batch_retry", "job.batch_skip", "job.replay"] },
  { group: "instances", kinds: ["instance.batch_recover", "definition.suspend_all", "definition.resume_all"] },
  { group: "recovery", kinds: RECOVERY_ACTIONS.map((a) => `recovery.${a}`) },
  { group: "retention", kinds: ["retention.run"] },
];

export const KINDS: string[] = KIND_GROUPS.flatMap((g) => g.kinds);

export type ItemTarget = "job" | "instance" | "table" | "item";

/** What an item's `key` is in a batch of `kind`. */
export function itemTarget(kind: string): ItemTarget {
  if (kind.startsWith("job.") || kind.startsWith("recovery.")) return "job";
  if (kind === "instance.batch_recover" || kind.startsWith("definition.")) return "instance";
  if (kind === "retention.run") return "table";
  return "item";
}

/** Whether the jobs a batch of `kind` touched carry its id as their replay
 * batch id (a batch skip cancels jobs without stamping them). */
export function stampsJobs(kind: string): boolean {
  return kind === "job.batch_retry" || kind === "job.replay" || kind.startsWith("recovery.");
}

/** The job ledger filtered to one batch's jobs. */
export function jobLedgerHref(batchId: string): string {
  return `/monitor/jobs?${new URLSearchParams({ replayBatchId: batchId }).toString()}`;
}

/** A batch id as the list shows it: a generated id (32 hex digits) by its
 * first 8, a readable one (retention-12) whole. */
export function shortId(id: string): string {
  if (/^[0-9a-f]{32}$/.test(id)) return id.slice(0, 8);
  return id.length > 20 ? `${id.slice(0, 19)}…` : id;
}

/** Milliseconds from start to finish (or to `now` while running). */
export function elapsedMs(startedAt: string, finishedAt: string | null, now = Date.now()): number {
  const end = finishedAt ? Date.parse(finishedAt) : now;
  return Math.max(0, end - Date.parse(startedAt));
}
