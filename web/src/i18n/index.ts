// i18n: one JSON file per page (namespace) and language under
// locales/{zh-CN,en}/<page>.json, found by glob so a new page adds files
// only. A missing key is reported as a console error (the browser tests fail
// on it) and a unit test compares the key sets of both languages.
import i18n from "i18next";
import { initReactI18next } from "react-i18next";
import dayjs from "dayjs";
import "dayjs/locale/zh-cn";

export const LANGUAGES = ["zh-CN", "en"] as const;
export type Language = (typeof LANGUAGES)[number];
const STORAGE = "flowledger.lang";

const files = import.meta.glob<Record<string, unknown>>("../locales/*/*.json", {
  eager: true,
  import: "default",
});
const resources: Record<string, Record<string, Record<string, unknown>>> = {};
for (const [path, content] of Object.entries(files)) {
  const match = /locales\/([^/]+)\/([^/]+)\.json$/.exec(path);
  if (!match) continue;
  const [, lang, ns] = match;
  (resources[lang] ??= {})[ns] = content;
}

function initialLanguage(): Language {
  const stored = window.localStorage.getItem(STORAGE);
  if (stored === "en" || stored === "zh-CN") return stored;
  return navigator.language.toLowerCase().startsWith("zh") ? "zh-CN" : "en";
}

void i18n.use(initReactI18next).init({
  resources,
  lng: initialLanguage(),
  fallbackLng: false,
  ns: Object.keys(resources["en"] ?? {}),
  defaultNS: "common",
  interpolation: { escapeValue: false },
  saveMissing: true,
  missingKeyHandler: (lngs, ns, key) => {
    console.error(`i18n: missing key ${ns}:${key} (${lngs.join(",")})`);
  },
  returnNull: false,
});
dayjs.locale(i18n.language === "zh-CN" ? "zh-cn" : "en");

export function setLanguage(lang: Language): void {
  window.localStorage.setItem(STORAGE, lang);
  dayjs.locale(lang === "zh-CN" ? "zh-cn" : "en");
  document.documentElement.lang = lang;
  void i18n.changeLanguage(lang);
}

export default i18n;
