// What a consistency conclusion and the verdict say in the active language
// (SPEC O-10, O-12): the texts of instance:finding.<rule> and
// instance:verdict.* filled with the messageParams the API's English message
// is made of (node, lists, age and the recovery action worded here), the
// verdict's repair from its action and params. A conclusion rule, verdict
// code or repair this console has no words for (a newer API) shows the API's
// English message. The en texts are the API's, word for word
// (tests/ops/test_consistency_messages.py renders them the same way).
import type { TFunction } from "i18next";
import i18n from "../../i18n";
import { ageLabel, formatTime } from "../format";
import type { Conclusion, Verdict } from "../../api/diagnosticsDocument";

type Params = Record<string, unknown>;

function node(t: TFunction, key: unknown): string {
  return t("instance:finding.node", { key: String(key) });
}

function list(t: TFunction, items: unknown, word: (item: unknown) => string): string {
  return (Array.isArray(items) ? items : []).map(word).join(t("instance:finding.listSeparator"));
}

/** A label from a map of the instance namespace, else the code itself. */
function label(t: TFunction, map: string, code: unknown): string {
  const key = `instance:${map}.${String(code)}`;
  return i18n.exists(key) ? t(key) : String(code);
}

/** The interpolation values of a text: the params, scalars only (`count`
 * would make i18next look for plural keys: the texts say {{events}}), and
 * the worded node(s), people, age and status. A delay's due time is the
 * API's ISO text in en (its English says it so), the local time otherwise. */
function values(t: TFunction, p: Params): Params {
  const out: Params = {};
  for (const [k, v] of Object.entries(p)) if (!Array.isArray(v) && k !== "count") out[k] = v;
  if (typeof p.dueAt === "string" && i18n.language !== "en") out.dueAt = formatTime(p.dueAt);
  if ("count" in p) out.events = p.count;
  if ("nodeKey" in p) out.node = node(t, p.nodeKey);
  if ("nodeKeys" in p) out.nodes = list(t, p.nodeKeys, (k) => node(t, k));
  if ("assignees" in p) out.assignees = list(t, p.assignees, String);
  if (typeof p.ageMinutes === "number") out.age = ageLabel(t, p.ageMinutes, "instance:finding.age");
  if ("status" in p) out.status = label(t, "verdict.status", p.status);
  return out;
}

function conclusionKey(rule: string, p: Params): string {
  if (rule === "subprocess_waiting" && p.childInstanceId == null) return `instance:finding.${rule}.messageNoChild`;
  return `instance:finding.${rule}.${p.outcomeUnconfirmed === true ? "messageUnconfirmed" : "message"}`;
}

export function conclusionText(t: TFunction, c: Pick<Conclusion, "rule" | "message" | "messageParams">): string {
  const p = c.messageParams;
  const key = p ? conclusionKey(c.rule, p) : "";
  return p && i18n.exists(key) ? t(key, values(t, p)) : c.message;
}

/** What the verdict adds for its repair; null for a repair without words. */
function repairText(t: TFunction, action: string | null, params: Params): string | null {
  const key = (name: string) => `instance:verdict.repair.${name}`;
  if (!action) return "";
  if (action === "force_jump" && params.target == null && !("candidates" in params)) return t(key("force_jump_pick"));
  if (action === "force_jump" && params.target == null)
    return t(key("force_jump_gateway"), { branches: list(t, params.candidates, (b) => node(t, b)) });
  if (action === "force_jump") return t(key("force_jump"), { target: node(t, params.target) });
  if (action === "job_retry") return t(key("job_retry"), { jobId: params.jobId });
  if (action === "recovery") return t(key("recovery"), { action: label(t, "finding.recoveryAction", params.action) });
  if (action === "remind") return t(key("remind"), { assignee: params.assignee });
  if (action === "replay") return t(key("replay"));
  return null;
}

const SYSTEM_TASKS = ["delay", "subprocess", "trigger"];

/** The variant of a healthy verdict's text. */
function healthyKey(code: string, p: Params): string {
  if (code === "waiting_too_long") return p.overdue === true ? "messageOverdue" : "message";
  if (code === "waiting_for_system_task" && typeof p.taskKind === "string" && SYSTEM_TASKS.includes(p.taskKind))
    return p.taskKind === "delay" && p.dueAt ? "delayUntil" : p.taskKind;
  return "message";
}

export function verdictText(t: TFunction, v: Verdict): string {
  const p = v.messageParams;
  const repair = repairText(t, v.action, v.params ?? {});
  if (!v.code || !p || repair === null) return v.message;
  if (i18n.exists(conclusionKey(v.code, p))) {
    // the conclusion the verdict names, as a sentence, with its repair
    const text = conclusionText(t, { rule: v.code, message: v.message, messageParams: p });
    return t("instance:verdict.problem", { text: text.charAt(0).toUpperCase() + text.slice(1), repair });
  }
  const key = `instance:verdict.healthy.${v.code}.${healthyKey(v.code, p)}`;
  return i18n.exists(key) ? t(key, values(t, p)) + repair : v.message;
}
