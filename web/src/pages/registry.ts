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
  load: () => Promise<unknown>;
}

type Loader = () => Promise<{ default: ComponentType }>;
function page(key: string, path: string, ns: string, load: Loader, group?: "monitor"): PageDef {
  return { key, path, ns, group, load, component: lazy(load) };
}

export const PAGES: PageDef[] = [
  page("jobs", "/monitor/jobs", "jobs", () => import("./jobs/JobLedgerPage"), "monitor"),
  page("instances", "/monitor/instances", "instances", () => import("./instances/InstancesPage"), "monitor"),
  page("compensation", "/monitor/compensation", "compensation", () => import("./compensation/CompensationPage"), "monitor"),
  page("subscriptions", "/subscriptions", "subscriptions", () => import("./subscriptions/SubscriptionsPage")),
  page("triggers", "/triggers", "triggers", () => import("./triggers/TriggerExecutionsPage")),
  page("integrations", "/integrations", "integrations", () => import("./integrations/IntegrationsPage")),
  page("definitions", "/definitions", "definitions", () => import("./definitions/DefinitionsPage")),
  page("tasks", "/tasks", "tasks", () => import("./tasks/MyTasksPage")),
];

/** Start loading the page of `pathname` (called before the first render, so
 * the route's chunk loads alongside the language files, not after them). */
export function preloadPage(pathname: string): void {
  const target = pathname === "/" || pathname === "/monitor" ? "/monitor/jobs" : pathname;
  void PAGES.find((p) => target.startsWith(p.path))?.load();
}

export const MONITOR_TABS = PAGES.filter((p) => p.group === "monitor");
export const HOME = MONITOR_TABS[0].path;
