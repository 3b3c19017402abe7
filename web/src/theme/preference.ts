// The color scheme preference (issue 33 item 3): "system" (the default)
// follows the operating system's light/dark setting live (CSS
// `prefers-color-scheme`, read with matchMedia); "light" and "dark" are the
// operator's explicit choice, remembered in localStorage. `applyScheme`
// marks <html> (data-theme, color-scheme, the focus ring color) so the page
// background, the scrollbars and the browser tests see the scheme in force.
import { useSyncExternalStore } from "react";

export type Scheme = "light" | "dark";
export type Preference = Scheme | "system";
export const PREFERENCES: Preference[] = ["system", "light", "dark"];

const STORAGE = "flowledger.theme";
const QUERY = "(prefers-color-scheme: dark)";

export function readPreference(): Preference {
  const stored = window.localStorage.getItem(STORAGE);
  return stored === "light" || stored === "dark" ? stored : "system";
}

export function storePreference(preference: Preference): void {
  if (preference === "system") window.localStorage.removeItem(STORAGE);
  else window.localStorage.setItem(STORAGE, preference);
}

export function systemScheme(): Scheme {
  return window.matchMedia(QUERY).matches ? "dark" : "light";
}

function subscribe(onChange: () => void): () => void {
  const media = window.matchMedia(QUERY);
  media.addEventListener("change", onChange);
  return () => media.removeEventListener("change", onChange);
}

/** The system's scheme, followed live. */
export function useSystemScheme(): Scheme {
  return useSyncExternalStore(subscribe, systemScheme);
}

export function resolveScheme(preference: Preference, system: Scheme): Scheme {
  return preference === "system" ? system : preference;
}

export function applyScheme(scheme: Scheme): void {
  const root = document.documentElement;
  root.dataset.theme = scheme;
  root.style.colorScheme = scheme;
  root.style.setProperty("--fl-focus", scheme === "dark" ? "#69b1ff" : "#0958d9");
  root.style.setProperty("--fl-current", scheme === "dark" ? "rgba(105, 177, 255, 0.16)" : "rgba(9, 88, 217, 0.08)");
}
