// The targeted recovery actions (SPEC O-18), one tab each: the filters
// (instance, minimum age, limit, rate — pre-filled from the URL, so the
// health inspection can link here), a preview (count, what each item gets,
// up to 20 samples) and a run with a reason, then its per-item result.
import { useState } from "react";
import { Alert, Button, Card, Descriptions, Form, Input, InputNumber, Modal, Space, Statistic, Table, Tabs, Tag, Typography } from "antd";
import type { ButtonProps } from "antd";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useSearchParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { BatchResult, resultColumn } from "../../components/BatchResult";
import { ErrorAlert } from "../../components/errors";
import { InstanceLink } from "../../components/InstanceLink";
import { formatTime } from "../../components/format";
import { RECOVERY_ACTIONS, readRecovery, type RecoveryAction, type RecoveryFilter } from "./recoveryQuery";
import { formatCount } from "../../components/units";
import { engineKeys } from "../../api/queries/engine";

type Item = Schemas["RecoveryItemPublic"];
type Outcome = Schemas["RecoveryOutcomePublic"];

function targetId(i: Item): number | null | undefined {
  return i.target === "job" ? i.jobId : i.target === "task" ? i.taskId : i.outboxId;
}

function itemColumns(t: (k: string) => string) {
  return [
    { title: t("recovery.col.verb"), dataIndex: "action", render: (v: string) => <Tag>{t(`recovery.verb.${v}`)}</Tag> },
    { title: t("recovery.col.target"), render: (_: unknown, i: Item) => `${t(`recovery.target.${i.target}`)} #${targetId(i) ?? "—"}` },
    { title: t("recovery.col.instance"), dataIndex: "instanceId", render: (id: number | null) => <InstanceLink id={id} /> },
    { title: t("recovery.col.node"), dataIndex: "nodeKey", render: (v: string | null) => v ?? "—" },
    { title: t("recovery.col.jobType"), dataIndex: "jobType", render: (v: string | null) => v ?? "—" },
    { title: t("recovery.col.since"), dataIndex: "since", render: formatTime },
    { title: t("recovery.col.reason"), dataIndex: "reason" },
  ];
}

function ActionPane({ action, initial }: { action: RecoveryAction; initial: RecoveryFilter }) {
  const { t } = useTranslation("engine");
  const client = useQueryClient();
  const [form] = Form.useForm<RecoveryFilter>();
  const [confirming, setConfirming] = useState(false);
  const [reason, setReason] = useState("");
  const body = () => {
    const v = form.getFieldsValue();
    return { instanceId: v.instanceId ?? null, minAgeMinutes: v.minAgeMinutes ?? 0, limit: v.limit ?? 100, ratePerSecond: v.ratePerSecond ?? null };
  };
  const preview = useMutation({
    mutationFn: () => unwrap(api.POST("/api/workflows/engine/recovery/{action}/preview", { params: { path: { action } }, body: body() })),
  });
  const run = useMutation({
    mutationFn: () => unwrap(api.POST("/api/workflows/engine/recovery/{action}/run", { params: { path: { action } }, body: { ...body(), reason: reason.trim() || null } })),
    onSuccess: async () => {
      setConfirming(false);
      setReason("");
      preview.reset();
      await client.invalidateQueries({ queryKey: engineKeys.diagnostics() });
    },
  });
  const plan = preview.data;
  const result = run.data;
  return (
    <div data-testid={`recovery-${action}`}>
      <Typography.Paragraph type="secondary">{t(`action.${action}.help`)}</Typography.Paragraph>
      <Form form={form} layout="inline" initialValues={{ limit: 100, minAgeMinutes: 0, ...initial }} onValuesChange={() => preview.reset()}>
        <Form.Item name="instanceId" label={t("recovery.instanceId")}>
          <InputNumber min={1} data-testid="recovery-instance" />
        </Form.Item>
        <Form.Item name="minAgeMinutes" label={t("recovery.minAge")}>
          <InputNumber min={0} data-testid="recovery-min-age" />
        </Form.Item>
        <Form.Item name="limit" label={t("recovery.limit")}>
          <InputNumber min={1} max={500} data-testid="recovery-limit" />
        </Form.Item>
        <Form.Item name="ratePerSecond" label={t("recovery.rate")}>
          <InputNumber min={1} max={200} placeholder="20" data-testid="recovery-rate" />
        </Form.Item>
        <Space>
          <Button onClick={() => preview.mutate()} loading={preview.isPending} data-testid="recovery-preview">{t("recovery.preview")}</Button>
          <Button type="primary" danger disabled={!plan || plan.count === 0} onClick={() => setConfirming(true)} data-testid="recovery-run">
            {t("recovery.run")}
          </Button>
        </Space>
      </Form>
      {preview.error ? <ErrorAlert error={preview.error} /> : null}
      {plan && (
        <Card size="small" style={{ marginTop: 12 }} data-testid="recovery-plan">
          <Space size="large" style={{ marginBottom: 8 }}>
            <Statistic title={t("recovery.count")} value={plan.count} valueRender={() => <span data-testid="recovery-count">{formatCount(plan.count)}</span>} />
            <Space wrap>
              {Object.entries(plan.byAction).map(([verb, n]) => (
                <Tag key={verb}>{`${t(`recovery.verb.${verb}`)}: ${n}`}</Tag>
              ))}
            </Space>
          </Space>
          <Table<Item>
            size="small"
            pagination={false}
            rowKey={(i) => `${i.target}:${i.jobId ?? ""}:${i.taskId ?? ""}:${i.outboxId ?? ""}`}
            dataSource={plan.samples}
            locale={{ emptyText: <Typography.Text type="secondary">{t("recovery.nothing")}</Typography.Text> }}
            columns={itemColumns(t)}
            footer={plan.count > plan.samples.length ? () => t("recovery.samplesOf", { shown: formatCount(plan.samples.length), total: formatCount(plan.count) }) : undefined}
          />
        </Card>
      )}
      {result && (
        <Card size="small" style={{ marginTop: 12 }} data-testid="recovery-result" title={t("recovery.result")}>
          <Descriptions size="small" column={3} style={{ marginBottom: 8 }}>
            <Descriptions.Item label={t("recovery.batch")}><span data-testid="recovery-batch">{result.batchId}</span></Descriptions.Item>
            <Descriptions.Item label={t("recovery.totals")}>
              <span data-testid="recovery-totals">{t("recovery.totalsText", Object.fromEntries(Object.entries(result.totals).map(([k, v]) => [k, formatCount(v)])))}</span>
            </Descriptions.Item>
            <Descriptions.Item label={t("recovery.eta")}>{`${formatTime(result.estimatedCompletion.from)} – ${formatTime(result.estimatedCompletion.to)}`}</Descriptions.Item>
          </Descriptions>
          <BatchResult<Outcome>
            counts={result.counts}
            pageSize={20}
            rowKey={(i) => `${i.target}:${i.jobId ?? ""}:${i.taskId ?? ""}:${i.outboxId ?? ""}`}
            rows={result.items}
            columns={[
              resultColumn<Outcome>(t("recovery.col.outcome"), (i) => ({ result: i.result, outcome: i.outcome, label: t(`recovery.outcome.${i.outcome}`) })),
              ...itemColumns(t).slice(0, 4),
              { title: t("recovery.col.detail"), dataIndex: "detail" },
            ]}
          />
        </Card>
      )}
      <Modal
        open={confirming}
        title={t("recovery.confirmTitle", { action: t(`action.${action}.title`) })}
        okText={t("recovery.run")}
        cancelText={t("common:cancel")}
        okButtonProps={{ danger: true, "data-testid": "recovery-confirm" } as ButtonProps}
        confirmLoading={run.isPending}
        onOk={() => run.mutate()}
        onCancel={() => setConfirming(false)}
      >
        <Alert type="warning" showIcon style={{ marginBottom: 12 }} message={t("recovery.confirmText", { n: formatCount(plan?.count ?? 0) })} />
        <Typography.Text>{t("recovery.reason")}</Typography.Text>
        <Input.TextArea rows={2} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} data-testid="recovery-reason" />
        {run.error ? <ErrorAlert error={run.error} /> : null}
      </Modal>
    </div>
  );
}

export function RecoveryPanel() {
  const { t } = useTranslation("engine");
  const [params, setParams] = useSearchParams();
  const { action, filter } = readRecovery(params);
  return (
    <Card size="small" title={t("recovery.title")} id="recovery" data-testid="recovery-panel">
      <Tabs
        activeKey={action}
        destroyInactiveTabPane
        onChange={(key) => {
          const next = new URLSearchParams(params);
          next.set("action", key);
          for (const k of ["instanceId", "minAgeMinutes", "limit", "ratePerSecond"]) next.delete(k);
          setParams(next, { replace: true });
        }}
        items={RECOVERY_ACTIONS.map((a) => ({
          key: a,
          label: <span data-testid={`recovery-tab-${a}`}>{t(`action.${a}.title`)}</span>,
          children: <ActionPane action={a} initial={a === action ? filter : {}} key={`${a}:${JSON.stringify(a === action ? filter : {})}`} />,
        }))}
      />
    </Card>
  );
}
