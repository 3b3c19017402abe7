// The console's keyboard shortcuts as data: what `?` lists and what
// useShortcuts.ts / listNavigation.ts handle.

/** `g` then this letter opens the page of that key. */
export const GO_TO: Record<string, string> = {
  i: "instances",
  a: "analytics",
  e: "engine",
  j: "jobs",
  c: "compensation",
  h: "health",
  s: "subscriptions",
  t: "triggers",
  n: "integrations",
  d: "definitions",
  m: "tasks",
  l: "alerts",
};

export const SHORTCUTS = ["j", "k", "Enter", "Esc", "/", "r", "?"] as const;
export const HELP: Record<(typeof SHORTCUTS)[number], string> = { j: "next", k: "previous", Enter: "open", Esc: "close", "/": "search", r: "refresh", "?": "help" };
