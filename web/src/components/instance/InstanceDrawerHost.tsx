// Mounted once by the layout: while the URL has `?instance=<id>` the runtime
// diagnostics drawer of that instance is open, on any page; closing it
// removes the parameter. The drawer's code is a lazy chunk, loaded only
// when an instance is opened, so the initial bundle does not carry it.
import { lazy, Suspense } from "react";
import type { QueryClient } from "@tanstack/react-query";
import { useSearchParams } from "react-router-dom";
import { INSTANCE_PARAM } from "../InstanceLink";
import { withParams } from "../useListState";
import { restoreListFocus } from "../listNavigation";
import { diagnosticsQuery } from "./useDiagnostics";

const loadDrawer = () => import("./InstanceDrawer");
const InstanceDrawer = lazy(loadDrawer);

function instanceOf(params: URLSearchParams): number | null {
  const id = Number(params.get(INSTANCE_PARAM));
  return Number.isInteger(id) && id > 0 ? id : null;
}

/** At boot, with `?instance=` in the URL: load the drawer's code and start
 * its diagnostics read now; returns the namespaces its first render needs. */
export function preloadInstanceDrawer(search: string, client: QueryClient | null): string[] {
  const id = instanceOf(new URLSearchParams(search));
  if (id === null) return [];
  void loadDrawer();
  if (client) void client.prefetchQuery(diagnosticsQuery(id));
  return ["instance"];
}

export function InstanceDrawerHost() {
  const [params, setParams] = useSearchParams();
  const id = instanceOf(params);
  if (id === null) return null;
  const close = () => {
    setParams(withParams(params, { [INSTANCE_PARAM]: null }));
    restoreListFocus(); // back to the row it was opened from (keyboard users)
  };
  return (
    <Suspense fallback={null}>
      <InstanceDrawer id={id} onClose={close} />
    </Suspense>
  );
}
