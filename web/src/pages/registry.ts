// Every page of the console: one module each (code-split with React.lazy),
// its own route and its own i18n namespace (locales/*/<ns>.json). A page
// with `group: "monitor"` is a tab of 流程监控 (Process monitor). Adding a
// page is one folder, two locale files and one entry here.
import { lazy, type ComponentType, type LazyExoticComponent } from "react";
import type { QueryClient } from "@tanstack/react-query";
import { prefetchInstances } from "./instances/queries";
import { prefetchJobLedger } from "./jobs/queries";

export interface PageDef {
  key: string;
  path: string;
  ns: string;
  group?: "monitor";
  component: LazyExoticComponent<ComponentType>;
  load: () => Promise<unknown>;
  /** Starts the first screen's reads at boot, beside the page's code. */
  prefetch?: Prefetch;
}

type Prefetch = (client: QueryClient, params: URLSearchParams) => void;

type Loader = () => Promise<{ default: ComponentType }>;
function page(key: string, path: string, ns: string, load: Loader, group?: "monitor", prefetch?: Prefetch): PageDef {
  return { key, path, ns, group, load, prefetch, component: lazy(load) };
}

export const PAGES: PageDef[] = [
  // 流程监控's six tabs, in the seeds' order (SPEC O-); the job ledger is HOME
  page("instances", "/monitor/instances", "instances", () => import("./instances/InstancesPage"), "monitor", prefetchInstances),
  page("analytics", "/monitor/analytics", "analytics", () => import("./analytics/AnalyticsPage"), "monitor"),
  page("engine", "/monitor/engine", "engine", () => import("./engine/EngineDiagnosticsPage"), "monitor"),
  // the recorded batch operations (issue 29 item 4): beside the engine tab whose recovery runs are batches
  page("batches", "/monitor/batches", "batches", () => import("./batches/BatchesPage"), "monitor"),
  page("jobs", "/monitor/jobs", "jobs", () => import("./jobs/JobLedgerPage"), "monitor", prefetchJobLedger),
  page("compensation", "/monitor/compensation", "compensation", () => import("./compensation/CompensationPage"), "monitor"),
  // beside it: health inspection, event subscriptions, trigger executions, …
  page("health", "/monitor/health", "health", () => import("./health/HealthPage")),
  page("subscriptions", "/subscriptions", "subscriptions", () => import("./subscriptions/SubscriptionsPage")),
  page("triggers", "/triggers", "triggers", () => import("./triggers/TriggerExecutionsPage")),
  page("integrations", "/integrations", "integrations", () => import("./integrations/IntegrationsPage")),
  page("definitions", "/definitions", "definitions", () => import("./definitions/DefinitionsPage")),
  page("tasks", "/tasks", "tasks", () => import("./tasks/MyTasksPage")),
  page("alerts", "/system/alerts", "alerts", () => import("./alerts/AlertsPage")),
];

/** Start loading the page of `pathname` (called before the first render, so
 * the route's chunk loads alongside the language files, not after them) and,
 * with a session, its first screen's reads; returns the namespaces its
 * first render needs. */
export function preloadPage(pathname: string, search: string, client: QueryClient | null): string[] {
  if (pathname.startsWith("/login")) return ["login"];
  const target = pathname === "/" || pathname === "/monitor" ? HOME : pathname;
  const found = PAGES.find((p) => target.startsWith(p.path));
  void found?.load();
  if (client) found?.prefetch?.(client, new URLSearchParams(search));
  return found ? [found.ns] : [];
}

export const MONITOR_TABS = PAGES.filter((p) => p.group === "monitor");
/** The first page after sign-in: the job ledger (作业账本). */
export const HOME = "/monitor/jobs";
