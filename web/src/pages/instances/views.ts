// The caller's saved views of the instance list (own and shared in their
// tenants), one query shared by the page and the views bar.
import { useQuery } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../../api/client";

export type View = Schemas["ViewPublic"];
export const VIEWS_KEY = ["views", "instances"];

export function useInstanceViews() {
  return useQuery({
    queryKey: VIEWS_KEY,
    queryFn: () => unwrap(api.GET("/api/workflows/views", { params: { query: { scope: "instances" } } })),
  });
}
