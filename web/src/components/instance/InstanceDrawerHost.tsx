// Mounted once by the layout: while the URL has `?instance=<id>` the runtime
// diagnostics drawer of that instance is open, on any page; closing it
// removes the parameter. The drawer's code is a lazy chunk, loaded only
// when an instance is opened, so the initial bundle does not carry it.
import { lazy, Suspense } from "react";
import { useSearchParams } from "react-router-dom";
import { INSTANCE_PARAM } from "../InstanceLink";

const InstanceDrawer = lazy(() => import("./InstanceDrawer"));

export function InstanceDrawerHost() {
  const [params, setParams] = useSearchParams();
  const id = Number(params.get(INSTANCE_PARAM));
  if (!Number.isInteger(id) || id < 1) return null;
  const close = () => {
    const next = new URLSearchParams(params);
    next.delete(INSTANCE_PARAM);
    setParams(next);
  };
  return (
    <Suspense fallback={null}>
      <InstanceDrawer id={id} onClose={close} />
    </Suspense>
  );
}
