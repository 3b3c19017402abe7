// Retry / skip of one job, and batch retry / batch skip of a selection: a
// confirmation that says what will happen, then the per-item result table.
import { useState } from "react";
import { App, Button, Form, Input, InputNumber, Modal, Space, Typography } from "antd";
import { useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { BatchResult, resultColumn, type BatchCounts } from "../../components/BatchResult";
import { useShowError } from "../../components/errors";
import { StatusTag } from "../../components/StatusTag";
import { jobActionKeys } from "../../api/queries/jobs";
import { invalidate } from "../../api/queries/keys";
import { validated } from "../../components/validated";

const RETRYABLE = new Set(["dead", "failed", "canceled"]);
const SKIPPABLE = new Set(["pending", "running", "paused", "failed", "dead"]);

export function JobActionButtons({ job }: { job: Schemas["JobDetail"] | Schemas["JobPublic"] }) {
  const { t } = useTranslation("jobs");
  const { modal, message } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const refresh = () => invalidate(client, ...jobActionKeys());

  function confirm(kind: "retry" | "skip") {
    let reason = "";
    modal.confirm({
      title: t(`action.${kind}Title`, { id: job.id }),
      content: (
        <Space direction="vertical" style={{ width: "100%" }}>
          <Typography.Paragraph>{t(`action.${kind}Explain`, { type: job.type, status: t(`common:status.${job.status}`) })}</Typography.Paragraph>
          <Input placeholder={t("action.reason")} onChange={(e) => (reason = e.target.value)} data-testid="action-reason" />
        </Space>
      ),
      okText: t(`action.${kind}`),
      cancelText: t("common:cancel"),
      okButtonProps: { "data-testid": "confirm-ok" } as Record<string, string>,
      onOk: async () => {
        try {
          const body = { reason: reason || null };
          if (kind === "retry") await unwrap(api.POST("/api/workflows/engine/jobs/{jobId}/retry", { params: { path: { jobId: job.id } }, body }));
          else await unwrap(api.POST("/api/workflows/engine/jobs/{jobId}/skip", { params: { path: { jobId: job.id } }, body }));
          message.success(t(`action.${kind}Done`, { id: job.id }));
          await refresh();
        } catch (e) {
          showError(e);
        }
      },
    });
  }

  return (
    <Space>
      <Button data-testid="job-retry" disabled={!RETRYABLE.has(job.status)} title={RETRYABLE.has(job.status) ? undefined : t("action.retryDisabled")} onClick={() => confirm("retry")}>
        {t("action.retry")}
      </Button>
      <Button data-testid="job-skip" disabled={!SKIPPABLE.has(job.status)} title={SKIPPABLE.has(job.status) ? undefined : t("action.skipDisabled")} onClick={() => confirm("skip")}>
        {t("action.skip")}
      </Button>
    </Space>
  );
}

type Outcome = Schemas["ItemOutcomePublic"];

export function BatchActions({ ids, onDone }: { ids: number[]; onDone: () => void }) {
  const { t } = useTranslation("jobs");
  const client = useQueryClient();
  const showError = useShowError();
  const [kind, setKind] = useState<"retry" | "skip" | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ kind: string; items: Outcome[]; submitted: number; skipped: number; batch?: string; batchId: string; counts: BatchCounts } | null>(null);
  const [form] = Form.useForm<{ reason?: string; rate: number }>();

  async function submit() {
    const values = await validated(form);
    if (!values) return;
    setBusy(true);
    try {
      if (kind === "retry") {
        const r = await unwrap(api.POST("/api/workflows/engine/jobs/batch-retry", { body: { ids, rate: values.rate, reason: values.reason || null } }));
        setResult({ kind, items: r.items, submitted: r.submitted, skipped: r.skipped, batch: r.replayBatchId, batchId: r.batchId, counts: r.counts });
      } else {
        const r = await unwrap(api.POST("/api/workflows/engine/jobs/batch-skip", { body: { ids, reason: values.reason || null } }));
        setResult({ kind: "skip", items: r.items, submitted: r.submitted, skipped: r.skipped, batchId: r.batchId, counts: r.counts });
      }
      setKind(null);
      onDone();
      await client.invalidateQueries();
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <Space>
        <Button data-testid="batch-retry" disabled={!ids.length} onClick={() => setKind("retry")}>
          {t("batch.retry", { count: ids.length })}
        </Button>
        <Button data-testid="batch-skip" disabled={!ids.length} onClick={() => setKind("skip")}>
          {t("batch.skip", { count: ids.length })}
        </Button>
      </Space>
      <Modal
        open={kind !== null}
        title={kind ? t(`batch.${kind}Title`, { count: ids.length }) : ""}
        onCancel={() => setKind(null)}
        onOk={submit}
        confirmLoading={busy}
        okText={kind ? t(`action.${kind}`) : ""}
        cancelText={t("common:cancel")}
        okButtonProps={{ "data-testid": "batch-confirm" } as Record<string, string>}
        destroyOnClose
      >
        <Typography.Paragraph data-testid="batch-explain">{kind ? t(`batch.${kind}Explain`, { count: ids.length, ids: ids.join(", ") }) : ""}</Typography.Paragraph>
        <Form form={form} layout="vertical" initialValues={{ rate: 20 }} preserve={false}>
          {kind === "retry" && (
            <Form.Item name="rate" label={t("replay.rate")} rules={[{ required: true, type: "number", min: 1, max: 200 }]}>
              <InputNumber min={1} max={200} addonAfter={t("replay.perSecond")} />
            </Form.Item>
          )}
          <Form.Item name="reason" label={t("action.reason")}>
            <Input />
          </Form.Item>
        </Form>
      </Modal>
      <Modal
        open={result !== null}
        title={result ? t("batch.resultTitle", { submitted: result.submitted, skipped: result.skipped }) : ""}
        onCancel={() => setResult(null)}
        footer={<Button onClick={() => setResult(null)} data-testid="batch-result-close">{t("common:close")}</Button>}
        width={720}
      >
        {result?.batch && <Typography.Paragraph>{t("batch.replayBatch", { id: result.batch })}</Typography.Paragraph>}
        <BatchResult<Outcome>
          tableTestId="batch-results"
          batchId={result?.batch ? null : result?.batchId}
          counts={result?.counts}
          rowKey="id"
          pageSize={500}
          rows={result?.items ?? []}
          columns={[
            { title: t("col.id"), dataIndex: "id" },
            resultColumn<Outcome>(t("batch.outcome"), (i) => ({ result: i.result, outcome: i.outcome, label: t(`batch.outcome_${i.outcome}`) })),
            // the status the job had when the batch checked it (a submitted job is queued now)
            { title: t("batch.statusBefore"), dataIndex: "status", render: (s: string | null) => <StatusTag status={s} /> },
            { title: t("batch.code"), dataIndex: "code", render: (c: string | null) => c ?? "—" },
            { title: t("batch.reason"), dataIndex: "reason", render: (r: string | null) => r ?? "—" },
          ]}
        />
      </Modal>
    </>
  );
}
