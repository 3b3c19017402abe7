// The caller's saved views of the instance list (own and shared in their
// tenants), one query shared by the page and the views bar.
import { useQuery } from "@tanstack/react-query";
import type { Schemas } from "../../api/client";
import { instanceViewsQuery } from "./queries";

export type View = Schemas["ViewPublic"];

export function useInstanceViews() {
  return useQuery(instanceViewsQuery());
}
