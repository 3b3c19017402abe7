// Every page of the console: one module each (code-split with React.lazy),
// its own route and its own i18n namespace (locales/*/<ns>.json). A page
// with `group: "monitor"` is a tab of 流程监控 (Process monitor). Adding a
// page is one folder, two locale files and one entry here.
import { lazy, type ComponentType, type LazyExoticComponent } from "react";

export interface PageDef {
  key: string;
  path: string;
  ns: string;
  group?: "monitor";
  component: LazyExoticComponent<ComponentType>;
}

export const PAGES: PageDef[] = [
  { key: "jobs", path: "/monitor/jobs", ns: "jobs", group: "monitor", component: lazy(() => import("./jobs/JobLedgerPage")) },
];

export const MONITOR_TABS = PAGES.filter((p) => p.group === "monitor");
export const HOME = MONITOR_TABS[0].path;
