// Compensation tickets: the list (by status and instance) and one ticket.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../client";

export type TicketStatus = Schemas["TicketStatus"];

export const ticketKeys = {
  lists: () => ["tickets"] as const,
  list: (status: TicketStatus | undefined, instanceId: number | undefined, cursor: string | null) => ["tickets", status, instanceId, cursor] as const,
  details: () => ["ticket"] as const,
  detail: (id: number) => ["ticket", id] as const,
};

export const ticketsQuery = (status: TicketStatus | undefined, instanceId: number | undefined, cursor: string | null) =>
  queryOptions({
    queryKey: ticketKeys.list(status, instanceId, cursor),
    queryFn: () => unwrap(api.GET("/api/workflows/compensation/list", { params: { query: { status, instanceId, limit: 20, cursor } } })),
  });

export const ticketQuery = (id: number) =>
  queryOptions({
    queryKey: ticketKeys.detail(id),
    queryFn: () => unwrap(api.GET("/api/workflows/compensation/{ticketId}", { params: { path: { ticketId: id } } })),
  });
