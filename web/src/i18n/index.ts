// i18n: one JSON file per page (namespace) and language under
// locales/{zh-CN,en}/<page>.json, found by glob so a new page adds files
// only. Namespaces load on demand: `common` before the first render, a
// page's own namespace when the page (or the boot preload) asks for it
// (react-i18next suspends until it is there), and only for the active
// language — switching language loads the namespaces in use. A missing key
// is reported as a console error (the browser tests fail on it) and a unit
// test compares the key sets of both languages.
import i18n, { type BackendModule, type ReadCallback } from "i18next";
import { initReactI18next } from "react-i18next";
import dayjs from "dayjs";
import "dayjs/locale/zh-cn";

export const LANGUAGES = ["zh-CN", "en"] as const;
export type Language = (typeof LANGUAGES)[number];
const STORAGE = "flowledger.lang";

const files = import.meta.glob<Record<string, unknown>>("../locales/*/*.json", { import: "default" });

/** Reads `locales/<language>/<namespace>.json` (a lazy chunk of its own). */
const localeFiles: BackendModule = {
  type: "backend",
  init() {},
  read(language: string, namespace: string, callback: ReadCallback) {
    const load = files[`../locales/${language}/${namespace}.json`];
    if (!load) {
      callback(new Error(`no strings for ${language}/${namespace}`), false);
      return;
    }
    load().then(
      (data) => callback(null, data),
      (error: Error) => callback(error, false),
    );
  },
};

function initialLanguage(): Language {
  const stored = window.localStorage.getItem(STORAGE);
  if (stored === "en" || stored === "zh-CN") return stored;
  return navigator.language.toLowerCase().startsWith("zh") ? "zh-CN" : "en";
}

function applyLanguage(lang: string): void {
  dayjs.locale(lang === "zh-CN" ? "zh-cn" : "en");
  document.documentElement.lang = lang;
}

const ready = i18n
  .use(localeFiles)
  .use(initReactI18next)
  .init({
    lng: initialLanguage(),
    fallbackLng: false,
    ns: ["common"],
    defaultNS: "common",
    interpolation: { escapeValue: false },
    saveMissing: true,
    missingKeyHandler: (lngs, ns, key) => {
      console.error(`i18n: missing key ${ns}:${key} (${lngs.join(",")})`);
    },
    returnNull: false,
  });

/** Resolves when `common` and the given namespaces of the active language are loaded. */
export function i18nReady(namespaces: string[] = []): Promise<void> {
  return ready.then(async () => {
    await i18n.loadNamespaces(namespaces);
    applyLanguage(i18n.language);
  });
}

export async function setLanguage(lang: Language): Promise<void> {
  window.localStorage.setItem(STORAGE, lang);
  await i18n.changeLanguage(lang); // loads every namespace in use for `lang`
  applyLanguage(lang);
}

export default i18n;
