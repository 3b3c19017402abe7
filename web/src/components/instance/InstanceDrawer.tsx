// The runtime diagnostics drawer of one instance (SPEC O-10, O-12; issue 14
// items 2-4): the verdict with its one-click repair, the conclusions, the
// views as tabs and the diagnostic-bundle download. Every repair opens its
// dialog pre-filled and reloads the drawer when done.
import { useState } from "react";
import { Button, Drawer, Space, Spin, Tabs, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { download } from "../../api/client";
import { ErrorAlert, useShowError } from "../errors";
import { InstanceLink } from "../InstanceLink";
import { DefinitionView } from "./DefinitionView";
import { DiagramView } from "./DiagramView";
import { FormView } from "./FormView";
import { RepairDialog } from "./RepairDialog";
import { RunTag } from "./RunTag";
import { EventsView, NodesView, TasksView, TokensView } from "./TablesViews";
import { TraceView } from "./TraceView";
import { TriggersView } from "./TriggersView";
import { Conclusions, VerdictBanner } from "./VerdictBanner";
import { useDiagnostics, useReload } from "./useDiagnostics";
import type { RepairRequest } from "./repairs";
import type { Diagnostics, Job } from "../../api/diagnosticsDocument";

function Position({ doc }: { doc: Diagnostics }) {
  const { t } = useTranslation("instance");
  // where a live token is: a node that failed and still holds one (the flow
  // waits there) counts, one a force jump or a repair has left does not
  const live = new Set(doc.tokens.items.filter((tk) => tk.state !== "consumed").map((tk) => tk.nodeKey));
  const at = doc.nodes.filter((n) => n.state === "active" || n.state === "waiting" || (n.state === "failed" && live.has(n.key)));
  return (
    <Space wrap data-testid="drawer-position">
      <Typography.Text type="secondary">{t("drawer.position")}</Typography.Text>
      {at.length ? at.map((n) => <Tag key={n.key} data-node={n.key}>{`${n.name ?? n.key} · ${t(`state.${n.state}`)}`}</Tag>) : "—"}
    </Space>
  );
}

// The drawer is there at once (no 300 ms slide-in): an operator opened it to
// read the verdict, and a drawer opened from a shared URL renders with the page.
const NO_SLIDE = { motion: { motionAppear: false, motionEnter: false }, maskMotion: { motionAppear: false, motionEnter: false } } as Record<string, unknown>;

export default function InstanceDrawer({ id, onClose }: { id: number; onClose: () => void }) {
  const { t } = useTranslation("instance");
  const showError = useShowError();
  const diagnostics = useDiagnostics(id);
  const reload = useReload();
  const [repair, setRepair] = useState<RepairRequest | null>(null);
  const [downloading, setDownloading] = useState(false);
  const doc = diagnostics.data;
  const retry = (job: Job) => setRepair({ action: "job_retry", params: { jobId: job.id } });

  async function bundle() {
    setDownloading(true);
    try {
      await download(`/api/workflows/instances/${id}/diagnostic-bundle`, `instance-${id}-bundle.json`);
    } catch (error) {
      showError(error);
    } finally {
      setDownloading(false);
    }
  }

  const head = doc?.instance;
  return (
    <Drawer
      open
      {...NO_SLIDE}
      width="min(1280px, 96vw)"
      onClose={onClose}
      aria-label={t("drawer.title", { id })}
      destroyOnClose
      title={
        <Space data-testid="drawer-title">
          {t("drawer.title", { id })}
          {head && <Typography.Text type="secondary">{`${head.definitionKey} v${head.definitionVersion} · ${head.initiator}`}</Typography.Text>}
          {head && <RunTag status={head.status} />}
          {head?.parentInstanceId && <InstanceLink id={head.parentInstanceId}>{t("drawer.parent", { id: head.parentInstanceId })}</InstanceLink>}
        </Space>
      }
      extra={
        <Space>
          {head?.status === "running" && (
            <Button onClick={() => setRepair({ action: "force_jump", params: {} })} data-testid="drawer-force-jump">
              {t("repair.force_jump")}
            </Button>
          )}
          <Button onClick={() => void diagnostics.refetch()} loading={diagnostics.isFetching} data-testid="drawer-refresh">
            {t("drawer.refresh")}
          </Button>
          <Button onClick={() => void bundle()} loading={downloading} data-testid="drawer-bundle">
            {t("drawer.bundle")}
          </Button>
        </Space>
      }
    >
      <div data-testid="instance-drawer" data-instance={id} data-loaded={doc ? "true" : "false"}>
        <ErrorAlert error={diagnostics.error} />
        {!doc && !diagnostics.error && <Spin />}
        {doc && (
          <>
            <VerdictBanner doc={doc} onRepair={setRepair} />
            <Conclusions doc={doc} onRepair={setRepair} />
            <Position doc={doc} />
            <Tabs
              style={{ marginTop: 8 }}
              defaultActiveKey="diagram"
              items={[
                { key: "diagram", children: <DiagramView doc={doc} /> },
                { key: "trace", children: <TraceView doc={doc} onRetry={retry} /> },
                { key: "nodes", children: <NodesView doc={doc} /> },
                { key: "tasks", children: <TasksView doc={doc} onRepair={setRepair} /> },
                { key: "triggers", children: <TriggersView doc={doc} onRetry={retry} /> },
                { key: "events", children: <EventsView doc={doc} /> },
                { key: "tokens", children: <TokensView doc={doc} /> },
                { key: "form", children: <FormView doc={doc} onDone={() => void reload()} onRetry={retry} /> },
                { key: "definition", children: <DefinitionView doc={doc} /> },
              ].map((tab) => ({ ...tab, label: <span data-testid={`drawer-tab-${tab.key}`}>{t(`tabs.${tab.key}`)}</span> }))}
            />
            {repair && (
              <RepairDialog
                doc={doc}
                repair={repair}
                onClose={() => setRepair(null)}
                onDone={() => {
                  setRepair(null);
                  void reload();
                }}
              />
            )}
          </>
        )}
      </div>
    </Drawer>
  );
}
