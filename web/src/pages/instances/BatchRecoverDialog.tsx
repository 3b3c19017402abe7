// Batch recovery (POST /instances/batch-recover, SPEC O-6): the running
// instances of a definition stuck at a node for N minutes, either the rows
// selected on the page or all N matching the list's filter (their ids are
// collected from the list, at most 500, so every other filter holds too).
// A reason is required; an optional rate paces the run (instances per
// second). A dry run shows each instance's planned outcome first (a per-item
// plan, so a BatchResult table rather than the count-and-sample
// BatchPreview) and how long a run at the rate takes, then the real run
// (confirmed with the count, the filter and that duration restated) runs on
// exactly the previewed ids and shows each result.
import { useState } from "react";
import { App, Button, Form, Input, InputNumber, Modal, Radio, Space, Typography } from "antd";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { BatchEstimate, BatchResult, resultColumn } from "../../components/BatchResult";
import { ErrorAlert } from "../../components/errors";
import { InstanceLink } from "../../components/InstanceLink";
import { formatNumber } from "../../components/units";
import type { InstanceQuery } from "./filters";
import { instanceKeys, recoverCountQuery } from "../../api/queries/instances";

type Result = Schemas["BatchRecoverPublic"];
const MAX_IDS = 500;
const PAGE = 200;

interface Criteria {
  definitionKey?: string;
  nodeKey?: string;
  stuckMinutes?: number | null;
  scope: "selected" | "matching";
  reason?: string;
  rate?: number | null;
}

/** The list filter narrowed to the recovery's selection: running, at the node, stuck. */
function recoveryQuery(query: InstanceQuery, c: Criteria): InstanceQuery {
  return {
    ...query,
    status: ["running"],
    definitionKey: c.definitionKey?.trim() || undefined,
    currentNode: c.nodeKey?.trim() || undefined,
    stuckMinutes: c.stuckMinutes && c.stuckMinutes >= 1 ? c.stuckMinutes : undefined,
  };
}

async function matchingIds(q: InstanceQuery): Promise<number[]> {
  const ids: number[] = [];
  let cursor: string | null | undefined = null;
  do {
    const page: Schemas["InstancePage"] = await unwrap(
      api.GET("/api/workflows/instances", { params: { query: { ...q, limit: PAGE, cursor } } }),
    );
    ids.push(...page.items.map((i) => i.id));
    cursor = page.next;
  } while (cursor && ids.length < MAX_IDS);
  return ids.slice(0, MAX_IDS);
}

export function BatchRecoverDialog(props: { query: InstanceQuery; selected: number[]; describe: (q: InstanceQuery) => string; onClose: () => void }) {
  const { t } = useTranslation("instances");
  const { modal } = App.useApp();
  const queryClient = useQueryClient();
  const [form] = Form.useForm<Criteria>();
  const initial: Criteria = {
    definitionKey: props.query.definitionKey,
    nodeKey: props.query.currentNode,
    stuckMinutes: props.query.stuckMinutes ?? 30,
    scope: props.selected.length ? "selected" : "matching",
  };
  const values = Form.useWatch([], form) ?? initial;
  const c: Criteria = { ...initial, ...values };
  const q = recoveryQuery(props.query, c);
  const [plan, setPlan] = useState<{ ids: number[]; result: Result } | null>(null);
  const [done, setDone] = useState<Result | null>(null);

  const count = useQuery({
    ...recoverCountQuery(q),
    enabled: c.scope === "matching" && !!q.definitionKey && !!q.currentNode,
  });
  const n = c.scope === "selected" ? props.selected.length : count.data?.counts.running;
  const ready = !!q.definitionKey && !!q.currentNode && c.stuckMinutes != null && !!c.reason?.trim() && !!n;

  const body = (ids: number[], dryRun: boolean): Schemas["BatchRecover"] => ({
    definitionKey: q.definitionKey!,
    nodeKey: q.currentNode!,
    stuckMinutes: c.stuckMinutes ?? 0,
    instanceIds: ids,
    reason: c.reason!.trim(),
    dryRun,
    rate: c.rate ?? null,
  });
  const dry = useMutation({
    mutationFn: async () => {
      const ids = c.scope === "selected" ? props.selected.slice(0, MAX_IDS) : await matchingIds(q);
      const result = await unwrap(api.POST("/api/workflows/instances/batch-recover", { body: body(ids, true) }));
      return { ids, result };
    },
    onSuccess: (p) => {
      setDone(null);
      setPlan(p);
    },
  });
  const real = useMutation({
    mutationFn: (ids: number[]) => unwrap(api.POST("/api/workflows/instances/batch-recover", { body: body(ids, false) })),
    onSuccess: async (result) => {
      setDone(result);
      await queryClient.invalidateQueries({ queryKey: instanceKeys.lists() });
      await queryClient.invalidateQueries({ queryKey: instanceKeys.countsAll() });
    },
  });

  const scopeText = (total: number) =>
    c.scope === "selected"
      ? t("recover.scopeSelectedText", { n: formatNumber(total) })
      : t("recover.scopeMatchingText", { n: formatNumber(total), filter: props.describe(q) });
  const confirm = () => {
    if (!plan) return;
    modal.confirm({
      title: t("recover.confirmTitle", { n: formatNumber(plan.ids.length) }),
      content: (
        <div data-testid="recover-confirm-text">
          <p>{scopeText(plan.ids.length)}</p>
          <p>{t("recover.confirmPlan", { advanced: plan.result.totals.advanced, skipped: plan.result.totals.skipped, failed: plan.result.totals.failed })}</p>
          <p>{t("recover.confirmReason", { reason: c.reason?.trim() })}</p>
          <p>
            <BatchEstimate rate={plan.result.rate} estimatedCompletion={plan.result.estimatedCompletion} />
          </p>
        </div>
      ),
      okText: t("recover.run"),
      okButtonProps: { danger: true, "data-testid": "recover-confirm-ok" },
      onOk: () => real.mutateAsync(plan.ids),
    });
  };

  const shown = done ?? plan?.result;
  return (
    <Modal
      open
      width={880}
      title={t("recover.title")}
      onCancel={props.onClose}
      footer={
        <Space>
          <Button onClick={props.onClose} data-testid="recover-close">
            {t("common:close")}
          </Button>
          <Button disabled={!ready || !!done} loading={dry.isPending} onClick={() => dry.mutate()} data-testid="recover-dry-run">
            {t("recover.dryRun")}
          </Button>
          <Button type="primary" danger disabled={!ready || !plan || !!done || !plan.ids.length} loading={real.isPending} onClick={confirm} data-testid="recover-run">
            {t("recover.run")}
          </Button>
        </Space>
      }
    >
      <Form<Criteria>
        form={form}
        layout="vertical"
        initialValues={initial}
        disabled={!!done}
        onValuesChange={() => setPlan(null)}
      >
        <Space wrap align="start">
          <Form.Item name="definitionKey" label={t("filter.definition")} required>
            <Input data-testid="recover-definition" style={{ width: 200 }} />
          </Form.Item>
          <Form.Item name="nodeKey" label={t("recover.node")} required>
            <Input data-testid="recover-node" style={{ width: 200 }} />
          </Form.Item>
          <Form.Item name="stuckMinutes" label={t("filter.stuck")} required>
            <InputNumber min={0} addonAfter={t("filter.minutes")} data-testid="recover-stuck" style={{ width: 160 }} />
          </Form.Item>
          <Form.Item name="rate" label={t("common:batch.rate")} tooltip={t("common:batch.rateHelp")}>
            <InputNumber<number>
              min={1}
              max={200}
              precision={0}
              placeholder={t("common:batch.rateAtOnce")}
              addonAfter={t("common:batch.perSecond")}
              data-testid="recover-rate"
              style={{ width: 190 }}
            />
          </Form.Item>
        </Space>
        <Form.Item name="scope" label={t("recover.scope")}>
          <Radio.Group data-testid="recover-scope">
            <Radio value="selected" disabled={!props.selected.length}>
              <span data-testid="recover-scope-selected">{t("recover.scopeSelected", { n: props.selected.length })}</span>
            </Radio>
            <Radio value="matching">
              <span data-testid="recover-scope-matching">{t("recover.scopeMatching", { n: count.data ? formatNumber(count.data.counts.running) : "…" })}</span>
            </Radio>
          </Radio.Group>
        </Form.Item>
        <Typography.Paragraph type="secondary" data-testid="recover-scope-text">
          {n !== undefined ? scopeText(n) : t("recover.needCriteria")}
          {c.scope === "matching" && (n ?? 0) > MAX_IDS ? ` ${t("recover.capped", { max: MAX_IDS })}` : ""}
        </Typography.Paragraph>
        <Form.Item name="reason" label={t("recover.reason")} required>
          <Input.TextArea rows={2} maxLength={500} data-testid="recover-reason" />
        </Form.Item>
      </Form>
      <ErrorAlert error={dry.error ?? real.error} />
      {shown && (
        <BatchResult<Schemas["RecoveryResult"]>
          type={done ? "success" : "info"}
          testId={done ? "recover-result" : "recover-plan"}
          tableTestId={done ? "recover-result-table" : "recover-plan-table"}
          message={t(done ? "recover.resultTitle" : "recover.planTitle", {
            selected: shown.totals.selected,
            advanced: shown.totals.advanced,
            skipped: shown.totals.skipped,
            failed: shown.totals.failed,
          })}
          description={done ? undefined : <BatchEstimate rate={shown.rate} estimatedCompletion={shown.estimatedCompletion} />}
          batchId={shown.batchId}
          counts={shown.counts}
          dryRun={!done}
          rowKey="instanceId"
          rows={shown.results}
          columns={[
            { title: t("col.id"), dataIndex: "instanceId", render: (id: number) => <InstanceLink id={id} /> },
            resultColumn<Schemas["RecoveryResult"]>(done ? t("recover.outcome") : t("recover.planned"), (r) => ({
              result: r.result,
              outcome: r.outcome,
              label: t(`recover.outcome_${r.outcome}`),
            })),
            { title: t("recover.tasks"), render: (_, r) => r.skippedTasks.map((task) => `#${task.taskId ?? "?"} ${task.nodeKey} (${task.assignee})`).join(", ") || "—" },
            { title: t("recover.toNodes"), render: (_, r) => r.toNodes.join(", ") || "—" },
            { title: t("recover.why"), render: (_, r) => r.reason ?? (r.error ? String(r.error.message ?? r.error.code) : "—") },
          ]}
        />
      )}
    </Modal>
  );
}
