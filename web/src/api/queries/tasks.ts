// Tasks: the caller's task list (by status) and one task.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../client";

export type TaskStatusFilter = Schemas["TaskStatus"] | "all";

export const taskKeys = {
  lists: () => ["tasks"] as const,
  list: (status: TaskStatusFilter, cursor: string | null) => ["tasks", status, cursor] as const,
  details: () => ["task"] as const,
  detail: (id: number) => ["task", id] as const,
};

export const myTasksQuery = (status: TaskStatusFilter, cursor: string | null) =>
  queryOptions({
    queryKey: taskKeys.list(status, cursor),
    queryFn: () =>
      unwrap(api.GET("/api/workflows/tasks", { params: { query: { assignee: "me", status: status === "all" ? undefined : status, limit: 20, cursor } } })),
  });

export const taskQuery = (id: number) =>
  queryOptions({
    queryKey: taskKeys.detail(id),
    queryFn: () => unwrap(api.GET("/api/workflows/tasks/{taskId}", { params: { path: { taskId: id } } })),
  });
