// 触发器执行 (Trigger executions, SPEC ): the trigger_dispatch and
// external_dispatch jobs, filterable by definition, node and status, with
// the request/response of each attempt (the job drawer) and retry / skip.
import { Button, Card, Form, Input, Select, Space, Typography } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { type Schemas } from "../../api/client";
import { formatTime } from "../../components/format";
import { StatusTag } from "../../components/StatusTag";
import { JobActionButtons } from "../jobs/JobActions";
import { JobDetailDrawer } from "../jobs/JobDetailDrawer";
import { JOB_STATUSES, type JobStatus } from "../jobs/filters";
import { ActionLink } from "../../components/ActionLink";
import { definitionCatalogQuery } from "../../api/queries/definitions";
import { triggerJobsQuery } from "../../api/queries/jobs";
import { PagedList } from "../../components/PagedList";
import { useListState } from "../../components/useListState";

const TYPES = ["trigger_dispatch", "external_dispatch"];
const TRIGGER_FILTERS = { type: "one", definitionKey: "one", nodeKey: "one", status: "many" } as const;

export default function TriggerExecutionsPage() {
  const { t } = useTranslation("triggers");
  const list = useListState(TRIGGER_FILTERS);
  const { pager, set } = list;
  const { definitionKey, nodeKey, type: typeParam } = list.values;
  const status = list.values.status as JobStatus[];
  const type = typeParam && TYPES.includes(typeParam) ? [typeParam] : TYPES;
  const query = { type, definitionKey, nodeKey, status: status.length ? status : undefined };
  const openJob = Number(list.params.get("job")) || null;
  const definitions = useQuery(definitionCatalogQuery());
  const jobs = useQuery({
    ...triggerJobsQuery(query, pager.cursor),
    placeholderData: keepPreviousData,
  });
  const defKeys = [...new Set((definitions.data?.items ?? []).map((d) => d.key))];
  return (
    <div data-testid="page-triggers">
      <Card size="small" style={{ marginBottom: 16 }}>
        <Form layout="inline">
          <Form.Item label={t("filter.type")}>
            <Select allowClear style={{ width: 200 }} value={typeParam} onChange={(v: string | undefined) => set({ type: v })} options={TYPES.map((v) => ({ value: v, label: t(`type.${v}`) }))} data-testid="trigger-filter-type" aria-label={t("filter.type")} />
          </Form.Item>
          <Form.Item label={t("filter.definition")}>
            <Select allowClear showSearch style={{ width: 200 }} value={definitionKey} onChange={(v: string | undefined) => set({ definitionKey: v })} options={defKeys.map((k) => ({ value: k, label: k }))} data-testid="trigger-filter-definition" aria-label={t("filter.definition")} />
          </Form.Item>
          <Form.Item label={t("filter.node")}>
            <Input.Search key={nodeKey} allowClear defaultValue={nodeKey} style={{ width: 180 }} onSearch={(v) => set({ nodeKey: v })} data-testid="trigger-filter-node" aria-label={t("filter.node")} />
          </Form.Item>
          <Form.Item label={t("filter.status")}>
            <Select mode="multiple" allowClear style={{ minWidth: 200 }} value={status} onChange={(v: string[]) => set({ status: v })} options={JOB_STATUSES.map((s) => ({ value: s, label: t(`common:status.${s}`) }))} data-testid="trigger-filter-status" aria-label={t("filter.status")} />
          </Form.Item>
          <Button onClick={() => list.setFilters({})}>{t("filter.reset")}</Button>
        </Form>
      </Card>
      <PagedList<Schemas["JobPublic"]>
        testId="triggers-table"
        main
        query={jobs}
        pager={pager}
        columns={[
          { title: t("col.job"), dataIndex: "id", render: (id: number) => <ActionLink onClick={() => set({ job: id })} data-testid={`trigger-job-${id}`}>#{id}</ActionLink> },
          { title: t("col.type"), dataIndex: "type", render: (v: string) => t(`type.${v}`) },
          { title: t("col.instance"), dataIndex: "instanceId", render: (v: number | null) => v ?? "—" },
          { title: t("col.node"), dataIndex: "nodeKey", render: (v: string | null) => v ?? "—" },
          { title: t("col.status"), dataIndex: "status", render: (s: string) => <StatusTag status={s} /> },
          { title: t("col.attempts"), render: (_, j) => `${j.attempts} / ${j.maxAttempts}` },
          { title: t("col.error"), dataIndex: "lastError", ellipsis: true, render: (v: string | null) => (v ? <Typography.Text type="danger">{v}</Typography.Text> : "—") },
          { title: t("col.updatedAt"), dataIndex: "updatedAt", width: 170, render: formatTime },
          { title: "", width: 176, render: (_, j) => <Space><JobActionButtons job={j} /></Space> },
        ]}
      />
      <JobDetailDrawer jobId={openJob} onClose={() => set({ job: null })} onOpen={(id) => set({ job: id })} />
    </div>
  );
}
