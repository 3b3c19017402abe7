// Integrations: automation rules and connectors, one paged list each.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "../client";

export const integrationKeys = {
  rules: () => ["rules"] as const,
  rulePage: (cursor: string | null) => ["rules", cursor] as const,
  connectors: () => ["connectors"] as const,
  connectorPage: (cursor: string | null) => ["connectors", cursor] as const,
};

export const automationRulesQuery = (cursor: string | null) =>
  queryOptions({
    queryKey: integrationKeys.rulePage(cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/automation-rules", { params: { query: { limit: 20, cursor } } })),
  });

export const connectorsQuery = (cursor: string | null) =>
  queryOptions({
    queryKey: integrationKeys.connectorPage(cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/connectors", { params: { query: { limit: 20, cursor } } })),
  });
