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
  {
    key: "compensation",
    path: "/monitor/compensation",
    ns: "compensation",
    group: "monitor",
    component: lazy(() => import("./compensation/CompensationPage")),
  },
  { key: "subscriptions", path: "/subscriptions", ns: "subscriptions", component: lazy(() => import("./subscriptions/SubscriptionsPage")) },
  { key: "triggers", path: "/triggers", ns: "triggers", component: lazy(() => import("./triggers/TriggerExecutionsPage")) },
  { key: "integrations", path: "/integrations", ns: "integrations", component: lazy(() => import("./integrations/IntegrationsPage")) },
  { key: "definitions", path: "/definitions", ns: "definitions", component: lazy(() => import("./definitions/DefinitionsPage")) },
  { key: "tasks", path: "/tasks", ns: "tasks", component: lazy(() => import("./tasks/MyTasksPage")) },
];

export const MONITOR_TABS = PAGES.filter((p) => p.group === "monitor");
export const HOME = MONITOR_TABS[0].path;
