// Suggestions for event type inputs; any dotted name, family wildcard or * is accepted.
export const EVENT_TYPE_SUGGESTIONS = [
  "*",
  "instance.*",
  "instance.started",
  "instance.approved",
  "instance.rejected",
  "instance.canceled",
  "task.*",
  "task.created",
  "task.completed",
  "task.overdue",
  "node.failed",
].map((v) => ({ value: v, label: v }));
