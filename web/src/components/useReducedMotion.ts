// The operator's "reduce motion" preference (the operating system's
// accessibility setting, CSS `prefers-reduced-motion: reduce`), followed live:
// main.tsx turns Ant Design's motion off with it (dialogs, drawers, dropdowns
// and messages appear and leave without their zoom and slide animations).
import { useSyncExternalStore } from "react";

const QUERY = "(prefers-reduced-motion: reduce)";

function subscribe(onChange: () => void): () => void {
  const media = window.matchMedia(QUERY);
  media.addEventListener("change", onChange);
  return () => media.removeEventListener("change", onChange);
}

const prefersReduced = () => window.matchMedia(QUERY).matches;

export function useReducedMotion(): boolean {
  return useSyncExternalStore(subscribe, prefersReduced);
}
