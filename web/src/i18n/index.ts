// i18n: one JSON file per page (namespace) and language under
// locales/{zh-CN,en}/<page>.json, found by glob so a new page adds files
// only; only the active language is loaded (the other one when switched to).
// A missing key is reported as a console error (the browser tests fail on
// it) and a unit test compares the key sets of both languages.
import i18n from "i18next";
import { initReactI18next } from "react-i18next";
import dayjs from "dayjs";
import "dayjs/locale/zh-cn";

export const LANGUAGES = ["zh-CN", "en"] as const;
export type Language = (typeof LANGUAGES)[number];
const STORAGE = "flowledger.lang";

const files = import.meta.glob<Record<string, unknown>>("../locales/*/*.json", { import: "default" });
const NAMESPACES = [...new Set(Object.keys(files).map((p) => /\/([^/]+)\.json$/.exec(p)![1]))];

async function loadLanguage(lang: Language): Promise<void> {
  if (i18n.hasResourceBundle(lang, "common")) return;
  const entries = Object.entries(files).filter(([path]) => path.includes(`/locales/${lang}/`));
  await Promise.all(
    entries.map(async ([path, load]) => {
      const ns = /\/([^/]+)\.json$/.exec(path)![1];
      i18n.addResourceBundle(lang, ns, await load(), true, true);
    }),
  );
}

function initialLanguage(): Language {
  const stored = window.localStorage.getItem(STORAGE);
  if (stored === "en" || stored === "zh-CN") return stored;
  return navigator.language.toLowerCase().startsWith("zh") ? "zh-CN" : "en";
}

const ready = i18n.use(initReactI18next).init({
  resources: {},
  lng: initialLanguage(),
  fallbackLng: false,
  ns: NAMESPACES,
  defaultNS: "common",
  interpolation: { escapeValue: false },
  saveMissing: true,
  missingKeyHandler: (lngs, ns, key) => {
    console.error(`i18n: missing key ${ns}:${key} (${lngs.join(",")})`);
  },
  returnNull: false,
});

/** Resolves when the active language's strings are loaded. */
export const i18nReady: Promise<void> = ready.then(async () => {
  await loadLanguage(i18n.language as Language);
  dayjs.locale(i18n.language === "zh-CN" ? "zh-cn" : "en");
  document.documentElement.lang = i18n.language;
});

export async function setLanguage(lang: Language): Promise<void> {
  await loadLanguage(lang);
  window.localStorage.setItem(STORAGE, lang);
  dayjs.locale(lang === "zh-CN" ? "zh-cn" : "en");
  document.documentElement.lang = lang;
  await i18n.changeLanguage(lang);
}

export default i18n;
