// Analytics: one query per panel, keyed by the panel and the definition
// filter, so changing the filter refetches every panel and a panel's error
// stays in its own card.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "../client";

/** The browser's IANA time zone: the daily chart's days are local days. */
export const BROWSER_TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

type Filter = { definitionKey?: string };

const PANELS = {
  totals: (query: Filter) => unwrap(api.GET("/api/workflows/analytics/totals", { params: { query } })),
  daily: (query: Filter) =>
    unwrap(api.GET("/api/workflows/analytics/daily", { params: { query: { ...query, tz: BROWSER_TIME_ZONE, days: 14 } } })),
  topDefinitions: (query: Filter) => unwrap(api.GET("/api/workflows/analytics/top-definitions", { params: { query } })),
  nodeBottlenecks: (query: Filter) => unwrap(api.GET("/api/workflows/analytics/node-bottlenecks", { params: { query } })),
  approverWorkload: (query: Filter) => unwrap(api.GET("/api/workflows/analytics/approver-workload", { params: { query } })),
  timeouts: (query: Filter) => unwrap(api.GET("/api/workflows/analytics/timeouts", { params: { query } })),
  asyncHealth: (query: Filter) => unwrap(api.GET("/api/workflows/analytics/async-health", { params: { query } })),
};

export type Panel = keyof typeof PANELS;
export type PanelData<P extends Panel> = Awaited<ReturnType<(typeof PANELS)[P]>>;

export const analyticsKeys = {
  all: () => ["analytics"] as const,
  panel: (panel: Panel, definitionKey: string | undefined) => ["analytics", panel, definitionKey ?? null] as const,
};

export const panelQuery = <P extends Panel>(panel: P, definitionKey: string | undefined) =>
  queryOptions({
    queryKey: analyticsKeys.panel(panel, definitionKey),
    queryFn: () => PANELS[panel]({ definitionKey }) as Promise<PanelData<P>>,
  });
