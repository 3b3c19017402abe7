// What a health problem says in the active language (SPEC O-16): the texts of
// health:problem.<rule> filled with the item's messageParams (the values the
// API's English message and suggestion are made of), `node` and `age` worded
// here. A rule this console has no words for (a newer API) shows the API's
// English message and suggestion. The en texts are the API's, word for word
// (tests/ops/test_health_messages.py renders them the same way).
import type { TFunction } from "i18next";
import i18n from "../../i18n";
import type { Schemas } from "../../api/client";
import { ageLabel } from "../../components/format";

type Item = Schemas["HealthItem"];

export function problemTexts(t: TFunction, item: Item): { message: string; suggestion: string } {
  const base = `health:problem.${item.rule}`;
  // `count` would make i18next look for plural keys: the texts say {{events}}
  const { count, ...params } = item.messageParams ?? {};
  const nodeKey = params.nodeKey;
  const values = {
    ...params,
    node: typeof nodeKey === "string" && nodeKey ? t("health:problem.node", { key: nodeKey }) : t("health:problem.itsNode"),
    age: typeof params.ageMinutes === "number" ? ageLabel(t, params.ageMinutes, "health:threshold") : "",
    events: count,
  };
  const text = (key: string, english: string) => (i18n.exists(`${base}.${key}`) ? t(`${base}.${key}`, values) : english);
  const noChild = item.rule === "subprocess_waiting" && params.childInstanceId == null;
  const unconfirmed = params.outcomeUnconfirmed === true;
  return {
    message: text(noChild ? "messageNoChild" : "message", item.message),
    suggestion: text(unconfirmed ? "suggestionUnconfirmed" : "suggestion", item.suggestion),
  };
}
