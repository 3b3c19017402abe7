// Auto-refresh chosen by the operator (off / 5 s / 30 s), remembered per page
// in localStorage, and paused while the browser tab is hidden
// (document.visibilityState): the returned `interval` is what a TanStack
// query takes as `refetchInterval`.
import { useState, useSyncExternalStore } from "react";

export const REFRESH_CHOICES = [0, 5_000, 30_000] as const;
export type RefreshChoice = (typeof REFRESH_CHOICES)[number];

function subscribe(onChange: () => void): () => void {
  document.addEventListener("visibilitychange", onChange);
  return () => document.removeEventListener("visibilitychange", onChange);
}

const isVisible = () => document.visibilityState === "visible";

function stored(key: string): RefreshChoice {
  const value = Number(window.localStorage.getItem(key));
  return (REFRESH_CHOICES as readonly number[]).includes(value) ? (value as RefreshChoice) : 0;
}

export function useAutoRefresh(page: string) {
  const key = `flowledger.refresh.${page}`;
  const [choice, setChoiceState] = useState<RefreshChoice>(() => stored(key));
  const visible = useSyncExternalStore(subscribe, isVisible);
  const setChoice = (value: RefreshChoice) => {
    window.localStorage.setItem(key, String(value));
    setChoiceState(value);
  };
  return { choice, setChoice, paused: choice > 0 && !visible, interval: choice > 0 && visible ? choice : (false as const) };
}
