// 作业账本 (Job ledger): the runtime panel, URL filters, the keyset-paged
// job table with batch actions, failure clusters, replay, the detail drawer.
import { Suspense, lazy, useMemo, useState } from "react";
import { Button, Card, Col, Form, Input, InputNumber, Row, Select, Space, Tag, Typography } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { formatTime } from "../../components/format";
import { InstanceLink } from "../../components/InstanceLink";
import { StatusTag } from "../../components/StatusTag";
import { BatchActions } from "./JobActions";
import { FailureClusters, type ClusterBy } from "./FailureClusters";
import { JOB_FILTERS, JOB_STATUSES, readQuery, type JobQuery } from "./filters";
import { RuntimePanel } from "./RuntimePanel";
import { jobSummaryQuery, jobsQuery } from "./queries";
import { ActionLink } from "../../components/ActionLink";
import { PagedList } from "../../components/PagedList";
import { useListState } from "../../components/useListState";

// the drawer and the replay dialog load when first opened
const JobDetailDrawer = lazy(() => import("./JobDetailDrawer").then((m) => ({ default: m.JobDetailDrawer })));
const ReplayDialog = lazy(() => import("./ReplayDialog").then((m) => ({ default: m.ReplayDialog })));

type Job = Schemas["JobPublic"];

export default function JobLedgerPage() {
  const { t } = useTranslation("jobs");
  const list = useListState(JOB_FILTERS);
  const { pager } = list;
  const query = useMemo(() => readQuery(list.values), [list.values]);
  const by = (list.params.get("by") as ClusterBy | null) ?? "reason";
  const jobParam = Number(list.params.get("job"));
  const openJob = Number.isInteger(jobParam) && jobParam > 0 ? jobParam : null;
  const [selected, setSelected] = useState<number[]>([]);
  const [replay, setReplay] = useState<{ open: boolean; initial: Record<string, unknown> }>({ open: false, initial: {} });

  // the grouping (?by=) and the open job (?job=) are kept
  const update = (q: JobQuery) => list.setFilters(q);
  const setJob = (id: number | null) => list.set({ job: id });

  const summary = useQuery(jobSummaryQuery());
  const types = (summary.data?.byType ?? []).map((b) => b.type);
  const jobs = useQuery({
    ...jobsQuery(query, pager.cursor),
    placeholderData: keepPreviousData,
  });

  return (
    <div data-testid="page-jobs">
      <RuntimePanel />
      <Card size="small" style={{ marginBottom: 16 }}>
        {/* remounted with its own store when the URL's filters change (Reset,
            Back): a form instance kept across the remount would keep stale values */}
        <Form
          layout="inline"
          key={list.key}
          initialValues={{ type: query.type ?? [], status: query.status ?? [], instanceId: query.instanceId, keyword: query.keyword }}
          onFinish={(v: { type: string[]; status: JobQuery["status"]; instanceId?: number | null; keyword?: string }) =>
            update({ ...query, type: v.type, status: v.status, instanceId: v.instanceId ?? undefined, keyword: v.keyword || undefined })
          }
        >
          <Form.Item name="type" label={t("filter.type")}>
            <Select mode="multiple" allowClear style={{ minWidth: 220 }} data-testid="filter-type" options={types.map((v) => ({ value: v, label: v }))} />
          </Form.Item>
          <Form.Item name="status" label={t("filter.status")}>
            <Select mode="multiple" allowClear style={{ minWidth: 200 }} data-testid="filter-status" options={JOB_STATUSES.map((s) => ({ value: s, label: t(`common:status.${s}`) }))} />
          </Form.Item>
          <Form.Item name="instanceId" label={t("filter.instance")}>
            <InputNumber min={1} data-testid="filter-instance" />
          </Form.Item>
          <Form.Item name="keyword" label={t("filter.keyword")}>
            <Input allowClear data-testid="filter-keyword" />
          </Form.Item>
          <Space>
            <Button type="primary" htmlType="submit" data-testid="filter-apply">{t("filter.apply")}</Button>
            <Button onClick={() => update({})} data-testid="filter-reset">{t("filter.reset")}</Button>
          </Space>
        </Form>
        <Space style={{ marginTop: 8 }} wrap>
          {query.traceId && <Tag closable onClose={() => update({ ...query, traceId: undefined })}>{`${t("filter.traceId")}: ${query.traceId}`}</Tag>}
          {query.fingerprint && <Tag closable onClose={() => update({ ...query, fingerprint: undefined })}>{`${t("filter.fingerprint")}: ${query.fingerprint}`}</Tag>}
          {query.replayBatchId && <Tag closable onClose={() => update({ ...query, replayBatchId: undefined })}>{`${t("replay.batch")}: ${query.replayBatchId}`}</Tag>}
        </Space>
      </Card>
      <Row gutter={16}>
        <Col span={24}>
          <Card
            size="small"
            title={t("table.title")}
            extra={
              <Space>
                <BatchActions ids={selected} onDone={() => setSelected([])} />
                <Button type="primary" danger onClick={() => setReplay({ open: true, initial: { types: query.type, keyword: query.keyword, instanceId: query.instanceId } })} data-testid="open-replay">
                  {t("replay.open")}
                </Button>
              </Space>
            }
          >
            <PagedList<Job>
              testId="jobs-table"
              main
              query={jobs}
              pager={pager}
              selection={{ selected, onChange: setSelected, label: (job) => t("selectJob", { id: job.id, type: job.type }) }}
              table={{ onRow: (job) => ({ onDoubleClick: () => setJob(job.id) }) }}
              columns={[
                { title: t("col.id"), dataIndex: "id", render: (id: number) => <ActionLink onClick={() => setJob(id)} data-testid={`job-link-${id}`}>#{id}</ActionLink> },
                { title: t("col.type"), dataIndex: "type" },
                { title: t("col.status"), dataIndex: "status", render: (s: string) => <StatusTag status={s} /> },
                { title: t("col.instance"), dataIndex: "instanceId", render: (v: number | null) => <InstanceLink id={v} /> },
                { title: t("col.node"), dataIndex: "nodeKey", render: (v: string | null) => v ?? "—" },
                { title: t("col.attempts"), render: (_, j) => `${j.attempts} / ${j.maxAttempts}` },
                {
                  title: t("detail.lastError"),
                  dataIndex: "lastError",
                  ellipsis: true,
                  render: (v: string | null) => (v ? <Typography.Text type="danger">{v}</Typography.Text> : "—"),
                },
                { title: t("col.updatedAt"), dataIndex: "updatedAt", width: 170, render: formatTime },
              ]}
            />
          </Card>
        </Col>
        <Col span={24} style={{ marginTop: 16 }}>
          <FailureClusters
            query={query}
            by={by}
            onBy={(b) => list.set({ by: b === "reason" ? null : b })}
            onReplay={(filter) => setReplay({ open: true, initial: filter })}
            onOpenJob={setJob}
          />
        </Col>
      </Row>
      <Suspense fallback={null}>
        {openJob !== null && <JobDetailDrawer jobId={openJob} onClose={() => setJob(null)} onOpen={setJob} />}
        {replay.open && <ReplayDialog open={replay.open} initial={replay.initial} types={types} onClose={() => setReplay({ open: false, initial: {} })} />}
      </Suspense>
    </div>
  );
}
