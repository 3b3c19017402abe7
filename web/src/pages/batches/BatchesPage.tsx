// 批量操作 (Batch operations, issue 29 item 4, SPEC O-6, O-18): every
// recorded operator batch, newest first, as Temporal UI's batch operations
// list — kind filter and keyset page in the URL (useListState), each row's state and
// counts (live while running) — and the drawer of one batch (?batch=<id>,
// linkable and kept across a reload) with its request and items.
import { Button, Card, Form, Select, Space, Tooltip, Typography } from "antd";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "react-router-dom";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { batchKeys, batchesQuery, type BatchFilters } from "../../api/queries/batches";
import { invalidate } from "../../api/queries/keys";
import { ActionLink } from "../../components/ActionLink";
import { BatchCountsLine } from "../../components/BatchResult";
import { formatTime } from "../../components/format";
import { PagedList } from "../../components/PagedList";
import { useListState } from "../../components/useListState";
import { BatchDrawer } from "./BatchDrawer";
import { KIND_GROUPS, jobLedgerHref, shortId, stampsJobs } from "./kinds";
import { CopyId, Finished, KindLabel, StateTag, useKindLabel } from "./labels";

type Row = Schemas["BatchOperationSummary"];

export const BATCH_PARAM = "batch";
/** The list's filter (components/useListState): the batch's kind. */
const BATCH_FILTERS = { kind: "one" } as const;

export default function BatchesPage() {
  const { t } = useTranslation("batches");
  const { params, values, pager, set } = useListState(BATCH_FILTERS);
  const client = useQueryClient();
  const kindLabel = useKindLabel();
  const kind = values.kind || undefined;
  const open = params.get(BATCH_PARAM) || null;
  const filters: BatchFilters = kind ? { kind } : {};
  const batches = useQuery({ ...batchesQuery(filters, pager.cursor), placeholderData: keepPreviousData });
  // the open batch is no filter: the list stays on its page
  const openBatch = (id: string | null) => set({ [BATCH_PARAM]: id });

  return (
    <div data-testid="page-batches">
      <Card size="small" style={{ marginBottom: 16 }}>
        <Typography.Paragraph type="secondary" style={{ marginBottom: 12 }}>
          {t("intro")}
        </Typography.Paragraph>
        <Form layout="inline">
          <Form.Item label={t("filter.kind")}>
            <Select
              allowClear
              showSearch
              optionFilterProp="label"
              style={{ width: 300 }}
              placeholder={t("filter.allKinds")}
              value={kind}
              data-testid="batch-filter-kind"
              aria-label={t("filter.kind")}
              onChange={(v: string | undefined) => set({ kind: v })}
              options={KIND_GROUPS.map((g) => ({
                label: t(`group.${g.group}`),
                title: t(`group.${g.group}`),
                options: g.kinds.map((k) => ({ value: k, label: kindLabel(k) })),
              }))}
            />
          </Form.Item>
          <Form.Item>
            <Button onClick={() => void invalidate(client, batchKeys.all())} data-testid="batch-refresh">
              {t("refresh")}
            </Button>
          </Form.Item>
        </Form>
      </Card>
      <PagedList<Row>
        testId="batches-table"
        main
        query={batches}
        pager={pager}
        emptyText={kind ? t("emptyKind") : t("empty")}
        table={{
          scroll: { x: "max-content" },
          onRow: (row) => ({ onClick: () => openBatch(row.id), style: { cursor: "pointer" }, "data-batch": row.id }) as object,
        }}
        columns={[
          {
            title: t("col.id"),
            dataIndex: "id",
            render: (id: string) => (
              <Space size={4}>
                <ActionLink
                  onClick={(e) => {
                    e.stopPropagation();
                    openBatch(id);
                  }}
                  aria-label={t("open", { id: shortId(id) })}
                  data-testid={`batch-link-${id}`}
                  style={{ fontFamily: "monospace" }}
                >
                  {shortId(id)}
                </ActionLink>
                <CopyId id={id} />
              </Space>
            ),
          },
          { title: t("col.kind"), dataIndex: "kind", width: 190, render: (k: string, r) => <KindLabel kind={k} dryRun={r.dryRun} /> },
          { title: t("col.state"), dataIndex: "state", render: (s: Row["state"]) => <StateTag state={s} /> },
          {
            title: t("col.counts"),
            key: "counts",
            render: (_, r) => (
              <div style={{ marginBottom: -8 }}>
                <BatchCountsLine counts={r.counts} />
              </div>
            ),
          },
          { title: t("col.actor"), dataIndex: "actor" },
          {
            title: t("col.reason"),
            dataIndex: "reason",
            render: (v: string | null) =>
              v ? (
                <Typography.Text ellipsis={{ tooltip: v }} style={{ maxWidth: 180 }}>
                  {v}
                </Typography.Text>
              ) : (
                "—"
              ),
          },
          { title: t("col.startedAt"), dataIndex: "startedAt", render: formatTime },
          { title: t("col.finishedAt"), key: "finishedAt", render: (_, r) => <Finished state={r.state} startedAt={r.startedAt} finishedAt={r.finishedAt} /> },
          {
            title: t("col.jobs"),
            key: "jobs",
            render: (_, r) =>
              stampsJobs(r.kind) ? (
                <Tooltip title={t("jobLedgerHint")}>
                  <Link to={jobLedgerHref(r.id)} onClick={(e) => e.stopPropagation()} data-testid={`batch-jobs-${r.id}`}>
                    {t("jobLedger")}
                  </Link>
                </Tooltip>
              ) : (
                "—"
              ),
          },
        ]}
      />
      {open ? <BatchDrawer id={open} onClose={() => openBatch(null)} /> : null}
    </div>
  );
}
