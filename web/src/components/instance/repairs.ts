// A repair the drawer can open: the verdict's or a conclusion's suggestion,
// or an operator's pick (a task's reassign / remind, a job's retry). `replay`
// takes the body of POST /engine/jobs/replay-dead as its params.
export type RepairAction = "force_jump" | "job_retry" | "recovery" | "remind" | "reassign" | "replay";

export interface RepairRequest {
  action: RepairAction;
  params: Record<string, unknown>;
}

const ACTIONS: RepairAction[] = ["force_jump", "job_retry", "recovery", "remind", "reassign", "replay"];

export function asRepair(repair: { action: string | null; params: Record<string, unknown> } | null | undefined): RepairRequest | null {
  if (!repair?.action || !ACTIONS.includes(repair.action as RepairAction)) return null;
  return { action: repair.action as RepairAction, params: repair.params ?? {} };
}
