// A link to one instance from anywhere in the console: it adds
// `?instance=<id>` to the current URL (path and other parameters kept), which
// opens the runtime diagnostics drawer mounted by the layout. The URL is the
// state, so a drawer can be shared, reloaded and closed with Back.
import type { ReactNode } from "react";
import { Link, useLocation } from "react-router-dom";

export const INSTANCE_PARAM = "instance";

export function instanceHref(pathname: string, search: string, id: number): string {
  const params = new URLSearchParams(search);
  params.set(INSTANCE_PARAM, String(id));
  return `${pathname}?${params.toString()}`;
}

export function InstanceLink({ id, children }: { id: number | null | undefined; children?: ReactNode }) {
  const location = useLocation();
  if (id == null) return <>—</>;
  return (
    <Link to={instanceHref(location.pathname, location.search, id)} data-testid={`instance-link-${id}`}>
      {children ?? `#${id}`}
    </Link>
  );
}
