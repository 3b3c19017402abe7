// The engine tab and the health inspection: engine diagnostics, the health
// score and its history, the last retention run, and the inspection's
// problem list. "engine-diagnostics", "health-score" and "health-inspection"
// are heads the live stream matches (live/topics.ts).
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "../client";
import type { GetParams } from "./keys";

type InspectionParams = GetParams<"/api/workflows/engine/health-inspection">;
/** The inspection's filters (the URL's, a saved view's). */
export type InspectionFilters = Pick<InspectionParams, "thresholdMinutes" | "rule" | "level">;

export const HEALTH_PAGE_SIZE = 100;

export const engineKeys = {
  diagnostics: () => ["engine-diagnostics"] as const,
  healthScore: () => ["health-score"] as const,
  healthHistory: (from: string | undefined, to: string | undefined) => ["health-history", from, to] as const,
  retentionRuns: (limit: number) => ["retention-runs", limit] as const,
  inspections: () => ["health-inspection"] as const,
  inspection: (filters: InspectionFilters, cursor: string | null) => ["health-inspection", JSON.stringify(filters), cursor] as const,
};

export const engineDiagnosticsQuery = () =>
  queryOptions({ queryKey: engineKeys.diagnostics(), queryFn: () => unwrap(api.GET("/api/workflows/engine/diagnostics")) });

export const healthScoreQuery = () =>
  queryOptions({ queryKey: engineKeys.healthScore(), queryFn: () => unwrap(api.GET("/api/workflows/engine/health-score")) });

/** The score's history over [from, to] (both ISO times), or the default window. */
export const healthHistoryQuery = (range: { from: string; to: string } | null) =>
  queryOptions({
    queryKey: engineKeys.healthHistory(range?.from, range?.to),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/health-history", { params: { query: range ?? {} } })),
  });

export const retentionRunsQuery = (limit: number) =>
  queryOptions({
    queryKey: engineKeys.retentionRuns(limit),
    queryFn: () => unwrap(api.GET("/api/workflows/engine/retention/runs", { params: { query: { limit } } })),
  });

export const healthInspectionQuery = (filters: InspectionFilters, cursor: string | null) =>
  queryOptions({
    queryKey: engineKeys.inspection(filters, cursor),
    queryFn: () =>
      unwrap(
        api.GET("/api/workflows/engine/health-inspection", {
          params: { query: { thresholdMinutes: filters.thresholdMinutes, rule: filters.rule, level: filters.level, limit: HEALTH_PAGE_SIZE, cursor } },
        }),
      ),
  });
