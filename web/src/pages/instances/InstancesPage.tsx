// 实例监控 (Instances): the filter bar and the status badges (both in the
// URL), saved views, the keyset-paged instance table (each id opens the
// instance drawer through ?instance=<id>), export and batch recovery, with
// a selectable auto-refresh.
import { Suspense, lazy, useEffect, useMemo, useRef, useState } from "react";
import { Button, Card, Space, Typography } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { meQuery } from "../../api/queries/session";
import { ErrorAlert } from "../../components/errors";
import { formatTime } from "../../components/format";
import { InstanceLink } from "../../components/InstanceLink";
import { StatusTag } from "../../components/StatusTag";
import { DeadlineBadges, type DeadlineState } from "../../components/DeadlineBadges";
import { REFRESH_CHOICES, useAutoRefresh, type RefreshChoice } from "../../components/useAutoRefresh";
import { useListState } from "../../components/useListState";
import { INSTANCE_FILTERS, fromView, hasFilters, matching, readQuery, type InstanceQuery } from "./filters";
import { useInstanceViews, type View } from "./views";
import { instanceCountsQuery, instancesQuery } from "./queries";
import { StatusCounts } from "./StatusCounts";
import { Choice } from "../../components/Choice";
import { PagedList } from "../../components/PagedList";

// The filter bar (date pickers) and the saved views load beside the first
// page of rows and render right after it: the rows are not held back by
// their code or their first render.
const loadFilterBar = () => import("./FilterBar");
const loadSavedViews = () => import("./SavedViews");
const FilterBar = lazy(() => loadFilterBar().then((m) => ({ default: m.FilterBar })));
const SavedViews = lazy(() => loadSavedViews().then((m) => ({ default: m.SavedViews })));
const ExportDialog = lazy(() => import("./ExportDialog").then((m) => ({ default: m.ExportDialog })));
const MigrateSelected = lazy(() => import("../definitions/MigratePanel").then((m) => ({ default: m.MigrateSelected })));
const BatchRecoverDialog = lazy(() => import("./BatchRecoverDialog").then((m) => ({ default: m.BatchRecoverDialog })));

type Instance = Schemas["InstancePublic"];
const VIEW_PARAM = "view";
const CONTROLS_PLACEHOLDER = <div style={{ minHeight: 150 }} />;

export default function InstancesPage() {
  const { t } = useTranslation("instances");
  const state = useListState(INSTANCE_FILTERS);
  const { params, pager } = state;
  const query = useMemo(() => readQuery(params), [params]);
  const refresh = useAutoRefresh("instances");
  const [selected, setSelected] = useState<number[]>([]);
  const [dialog, setDialog] = useState<"export" | "recover" | null>(null);
  const [migrating, setMigrating] = useState(false);
  const me = useQuery(meQuery());
  const views = useInstanceViews();
  const viewItems = views.data?.items ?? [];
  const current = viewItems.find((v) => String(v.id) === params.get(VIEW_PARAM));

  // the caller's default view applies when the tab opens without filters;
  // the unfiltered list loads meanwhile (in parallel, not after the views)
  // and is shown once it is known that there is no default (a URL with a
  // page of the unfiltered list is not "without filters": a reload stays)
  const opened = useRef(!hasFilters(params) && !params.has(VIEW_PARAM) && !pager.hasPrevious);
  const waitingForDefault = opened.current && (views.isPending || me.isPending);
  useEffect(() => {
    if (!opened.current || views.isPending || me.isPending) return;
    opened.current = false;
    const mine = viewItems.find((v) => v.isDefault && v.owner === me.data?.id);
    if (mine) state.setFilters(fromView(mine.filters), { [VIEW_PARAM]: mine.id }, { replace: true });
  });

  // new filters (and the view they came from, or none): page 1, the open drawer kept
  const apply = (q: InstanceQuery, view?: View) => {
    setSelected([]);
    state.setFilters(q, { [VIEW_PARAM]: view?.id });
  };

  const list = useQuery({
    ...instancesQuery(query, pager.cursor),
    placeholderData: keepPreviousData,
    refetchInterval: refresh.interval,
  });
  const [controls, setControls] = useState(false);
  const rowsShown = !waitingForDefault && (list.isSuccess || list.isError);
  useEffect(() => {
    void loadFilterBar();
    void loadSavedViews();
  }, []);
  useEffect(() => {
    if (!rowsShown || controls) return;
    const frame = requestAnimationFrame(() => setControls(true));
    return () => cancelAnimationFrame(frame);
  }, [rowsShown, controls]);
  const counts = useQuery({
    ...instanceCountsQuery(query),
    placeholderData: keepPreviousData,
    refetchInterval: refresh.interval,
  });

  const describe = (q: InstanceQuery) => {
    const parts = Object.entries(q)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) =>
        t("describe.pair", {
          key: t(`describe.${k}`),
          value: Array.isArray(v) ? v.map((s) => t(`common:status.${s}`)).join(t("describe.or")) : typeof v === "boolean" ? t(v ? "common:yes" : "common:no") : String(v),
        }),
      );
    return parts.length ? parts.join(t("describe.and")) : t("describe.none");
  };

  // the batch migration: every selected instance of this page, of one definition version
  const chosen = (list.data?.items ?? []).filter((i) => selected.includes(i.id));
  const migratable =
    chosen.length > 0 &&
    chosen.length === selected.length &&
    chosen.every((i) => i.definitionKey === chosen[0].definitionKey && i.definitionVersion === chosen[0].definitionVersion);

  return (
    <div data-testid="page-instances">
      <Card size="small" style={{ marginBottom: 12 }}>
        <Suspense fallback={CONTROLS_PLACEHOLDER}>
          {controls ? (
            <>
              <FilterBar query={query} onApply={(q) => apply(q)} />
              <div style={{ marginTop: 12 }}>
                <SavedViews me={me.data?.id} views={viewItems} current={current} query={query} onPick={(v) => apply(v ? fromView(v.filters) : query, v)} />
              </div>
            </>
          ) : (
            CONTROLS_PLACEHOLDER
          )}
        </Suspense>
      </Card>
      <Card
        size="small"
        title={
          <div style={{ display: "flex", flexWrap: "wrap", gap: 8, padding: "8px 0" }}>
            <StatusCounts counts={counts.data} status={query.status} onChange={(status) => apply({ ...query, status })} />
            <Space wrap style={{ marginLeft: "auto" }}>
            <Typography.Text type="secondary" data-testid="refresh-state">{refresh.paused ? t("refresh.paused") : t("refresh.label")}</Typography.Text>
            <Choice
              label={t("refresh.label")}
              data-testid="auto-refresh"
              value={refresh.choice}
              onChange={(v) => refresh.setChoice(v as RefreshChoice)}
              options={REFRESH_CHOICES.map((v) => ({ value: v, label: v ? t("refresh.every", { s: v / 1000 }) : t("refresh.off") }))}
            />
            <Button onClick={() => setDialog("export")} data-testid="open-export">
              {t("export.open")}
            </Button>
            <Button onClick={() => setMigrating(true)} disabled={!migratable} data-testid="open-migrate">
              {t("migrate.openSelected", { n: selected.length })}
            </Button>
            <Button danger onClick={() => setDialog("recover")} data-testid="open-recover">
              {selected.length ? t("recover.openSelected", { n: selected.length }) : t("recover.open")}
            </Button>
            </Space>
          </div>
        }
      >
        {counts.error ? <ErrorAlert error={counts.error} /> : null}
        <PagedList<Instance>
          testId="instances-table"
          main
          query={list}
          pager={pager}
          loading={list.isLoading || waitingForDefault}
          rows={waitingForDefault ? [] : undefined}
          selection={{
            selected,
            onChange: setSelected,
            label: (i) => t("selectInstance", { id: i.id, definition: `${i.definitionKey} v${i.definitionVersion}` }),
          }}
          columns={[
            { title: t("col.id"), dataIndex: "id", width: 90, render: (id: number) => <InstanceLink id={id} /> },
            { title: t("col.definition"), render: (_, i) => `${i.definitionKey} v${i.definitionVersion}` },
            { title: t("col.status"), dataIndex: "status", width: 110, render: (s: string) => <StatusTag status={s} /> },
            { title: t("col.deadline"), dataIndex: "deadline", width: 130, render: (d: DeadlineState[] | undefined) => (d?.length ? <DeadlineBadges states={d} /> : "—") },
            { title: t("col.initiator"), dataIndex: "initiator" },
            { title: t("col.createdAt"), dataIndex: "createdAt", width: 170, render: formatTime },
            { title: t("col.updatedAt"), dataIndex: "updatedAt", width: 170, render: formatTime },
            { title: t("col.finishedAt"), dataIndex: "finishedAt", width: 170, render: formatTime },
            {
              title: t("col.error"),
              dataIndex: "error",
              ellipsis: true,
              render: (v: string | null) => (v ? <Typography.Text type="danger">{v}</Typography.Text> : "—"),
            },
          ]}
        />
      </Card>
      <Suspense fallback={null}>
        {dialog === "export" && <ExportDialog query={query} total={matching(counts.data, query)} filterText={describe(query)} onClose={() => setDialog(null)} />}
        {migrating && chosen.length > 0 && (
          <MigrateSelected defKey={chosen[0].definitionKey} from={chosen[0].definitionVersion} instanceIds={selected} onClose={() => setMigrating(false)} />
        )}
        {dialog === "recover" && <BatchRecoverDialog query={query} selected={selected} describe={describe} onClose={() => setDialog(null)} />}
      </Suspense>
    </div>
  );
}
