// Alerting (SPEC O-22): rules (paged, and all of them for the silence
// dialog's picker), events by kind, silences by state, and the metric
// catalog.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "../client";
import type { GetParams } from "./keys";

export type AlertEventKind = NonNullable<GetParams<"/api/workflows/engine/alerts/events">["kind"]>;
export type SilenceState = NonNullable<GetParams<"/api/workflows/engine/alerts/silences">["state"]>;

export const alertKeys = {
  rules: () => ["alert-rules"] as const,
  rulePage: (cursor: string | null) => ["alert-rules", cursor] as const,
  allRules: () => ["alert-rules", "all"] as const,
  events: (kind: AlertEventKind | undefined, cursor: string | null) => ["alert-events", kind ?? null, cursor] as const,
  silences: () => ["alert-silences"] as const,
  silencePage: (state: SilenceState, cursor: string | null) => ["alert-silences", state, cursor] as const,
  metrics: () => ["alert-metrics"] as const,
};

export const alertRulesQuery = (cursor: string | null) =>
  queryOptions({
    queryKey: alertKeys.rulePage(cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/alerts/rules", { params: { query: { limit: 20, cursor } } })),
  });

export const allAlertRulesQuery = () =>
  queryOptions({
    queryKey: alertKeys.allRules(),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/alerts/rules", { params: { query: { limit: 200 } } })),
  });

export const alertEventsQuery = (kind: AlertEventKind | undefined, cursor: string | null) =>
  queryOptions({
    queryKey: alertKeys.events(kind, cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/alerts/events", { params: { query: { kind, limit: 20, cursor } } })),
  });

export const silencesQuery = (state: SilenceState, cursor: string | null) =>
  queryOptions({
    queryKey: alertKeys.silencePage(state, cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/alerts/silences", { params: { query: { state, limit: 20, cursor } } })),
  });

export const alertMetricsQuery = () =>
  queryOptions({ queryKey: alertKeys.metrics(), queryFn: () => unwrap(api.GET("/api/workflows/engine/alerts/metrics")), staleTime: 30_000 });
