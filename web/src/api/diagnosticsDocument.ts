// The instance diagnostics document (GET /instances/{id}/diagnostics, see
// docs/diagnostics.md): the API answers it as free JSON, so its shape is
// written down here once, next to the client, for the query layer and the
// drawer's views.
export interface InstanceHead {
  id: number;
  tenant: string;
  definitionKey: string;
  definitionVersion: number;
  status: string;
  initiator: string;
  parentInstanceId: number | null;
  traceId: string | null;
  error: unknown;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

export interface Execution {
  id: number;
  attempt: number;
  status: string;
  nodeId: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  request: unknown;
  response: unknown;
  error: string | null;
  errorCode: string | null;
}

export interface Job {
  id: number;
  type: string;
  status: string;
  instanceId: number | null;
  taskId: number | null;
  nodeKey: string | null;
  attempts: number;
  maxAttempts: number;
  runAt: string;
  payload: unknown;
  lastError: string | null;
  lastErrorCode: string | null;
  createdAt: string;
  executions: Execution[];
}

export interface TraceRow {
  id: number;
  event: string;
  nodeKey: string | null;
  tokenId: number | null;
  taskId: number | null;
  jobId: number | null;
  detail: unknown;
  createdAt: string;
  // issue 31 item 2: "intervention" rows carry what an operator did
  kind?: "engine" | "intervention";
  action?: string;
  actor?: string | null;
  reason?: string | null;
  changes?: InterventionChange[];
}

export interface InterventionChange {
  field: string;
  before: unknown;
  after: unknown;
}

export interface Trace {
  items: TraceRow[];
  total: number;
  limit: number;
  next: string | null;
  jobChain: { traceId: string | null; jobs: Job[]; truncated: boolean };
}

export interface NodeRun {
  key: string;
  type: string;
  name: string | null;
  state: string;
  visits: number;
  firstEnteredAt: string | null;
  lastEnteredAt: string | null;
  error: { code: string; message: string; at: string } | null;
  tokenIds: number[];
  openTaskIds: number[];
}

export interface TaskRow {
  id: number;
  nodeKey: string;
  kind: string;
  status: string;
  cc: boolean;
  assignee: string;
  action: string | null;
  comment: string | null;
  tokenId: number | null;
  dueAt: string | null;
  createdAt: string;
  finishedAt: string | null;
  finishedBy: string | null;
  durationMs: number | null;
  open: boolean;
}

export interface OutboxRow {
  id: number;
  eventType: string;
  status: string;
  payload: unknown;
  createdAt: string;
  dispatchedAt: string | null;
  error: string | null;
  dispatchJob: { id: number; status: string; attempts: number; lastError: string | null } | null;
  hits: { id: number; subscriptionId: number; status: string; responseStatus: number | null; lastError: string | null }[];
}

export interface Token {
  id: number;
  nodeKey: string;
  state: string;
  forkStack: { frameId: number; forkNode: string; gateway: string; expected: number }[];
  createdAt: string;
  consumedAt: string | null;
}

export interface OpenJoin {
  joinNode: string;
  forkNode: string;
  frameId: number;
  gateway: string;
  expected: number;
  arrived: { branch: string; tokenId: number; atNode: string }[];
  awaited: { branch: string; tokenIds: number[]; atNodes: string[] }[];
}

export interface DiagramView {
  nodes: { key: string; type: string; name: string | null; state: string; visits: number }[];
  edges: { from: string; to: string; condition: string | null; default: boolean | null; on: string | null; taken: boolean }[];
}

export interface FormView {
  data: Record<string, unknown>;
  history: { id: number; writtenBy: string; source: string; changes: Record<string, unknown>; createdAt: string }[];
}

export interface Repair {
  action: string | null;
  params: Record<string, unknown>;
}

// message: English (the CLI's words); messageParams: the values it is made of,
// from which findingText.ts words it by rule / code in the active language
export interface Conclusion {
  rule: string;
  level: "critical" | "warning" | string;
  message: string;
  messageParams: Record<string, unknown>;
  evidence: { taskIds: number[]; tokenIds: number[]; jobIds: number[] };
  repair: Repair | null;
  // the health inspection rule that reports the same problem (same level and
  // repair), null for an O-12 check the inspection does not name
  healthRule?: string | null;
}

// code: the rule of the conclusion it names, or what a healthy instance does
export interface Verdict {
  code: string;
  message: string;
  messageParams: Record<string, unknown>;
  action: string | null;
  params: Record<string, unknown>;
}

export interface Diagnostics {
  instance: InstanceHead;
  trace: Trace;
  nodes: NodeRun[];
  tasks: TaskRow[];
  triggers: Job[];
  events: { items: OutboxRow[]; total: number; truncated: boolean };
  tokens: { items: Token[]; joins: OpenJoin[] };
  diagram: DiagramView;
  form: FormView;
  definition: { definitionId: number; key: string; version: number; snapshot: unknown };
  conclusions: Conclusion[];
  verdict: Verdict;
}
