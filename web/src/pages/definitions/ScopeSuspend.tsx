// Suspend / resume every running (suspended) instance of a definition at
// once (issue 31 item 3): a dialog that shows the dry run first — how many
// instances the run would take, a sample of their ids and the instances of
// the selection skipped by their status — for the definition, optionally
// only this version and only the instances at one node; then the run, with
// a reason (required to suspend), optionally at a rate (instances per
// second: the preview says how long the run takes at it), and its outcome
// per instance. The preview is the shared BatchPreview.
import { useState } from "react";
import { App, Button, Checkbox, Form, Input, InputNumber, Modal, Select, Space, Typography } from "antd";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { BatchPreview, BatchResult, resultColumn } from "../../components/BatchResult";
import { ErrorAlert, useShowError } from "../../components/errors";
import { InstanceLink } from "../../components/InstanceLink";
import { instanceKeys, scopePreviewQuery } from "../../api/queries/instances";

type Action = "suspend" | "resume";
type Item = Schemas["ScopeItem"];

/** The keys of the definition's nodes that can hold a token (not start / end). */
export function waitingNodes(source: unknown): string[] {
  const nodes = (source as { nodes?: { key: string; type: string }[] } | null)?.nodes;
  return Array.isArray(nodes) ? nodes.filter((n) => n.type !== "start" && n.type !== "end").map((n) => n.key) : [];
}

function ScopeDialog({ action, defKey, version, nodes, onClose }: { action: Action; defKey: string; version: number | null; nodes: string[]; onClose: () => void }) {
  const { t } = useTranslation("definitions");
  const { message } = App.useApp();
  const showError = useShowError();
  const client = useQueryClient();
  const [node, setNode] = useState<string | undefined>();
  const [onlyVersion, setOnlyVersion] = useState(false);
  const [reason, setReason] = useState("");
  const [rate, setRate] = useState<number | null>(null);
  const scope = { definitionKey: defKey, version: onlyVersion ? version : null, nodeKey: node ?? null, rate };
  // the previous answer stays while the next loads (no flicker as the rate is typed)
  const preview = useQuery({ ...scopePreviewQuery(action, scope), placeholderData: keepPreviousData });
  const run = useMutation({
    mutationFn: () =>
      action === "suspend"
        ? unwrap(api.POST("/api/workflows/instances/scope-suspend", { body: { ...scope, reason: reason.trim() } }))
        : unwrap(api.POST("/api/workflows/instances/scope-resume", { body: { ...scope, reason: reason.trim() || null } })),
    onSuccess: async (result) => {
      const done = action === "suspend" ? result.totals.suspended : result.totals.resumed;
      message.success(t(`scope.${action}.done`, { n: done }));
      await client.invalidateQueries({ queryKey: instanceKeys.scopePreviews() });
      await client.invalidateQueries({ queryKey: instanceKeys.lists() });
    },
    onError: showError,
  });
  const plan = preview.data;
  const result = run.data;
  const canRun = !!plan && !preview.isPlaceholderData && plan.count > 0 && (action === "resume" || reason.trim().length > 0) && !result;
  return (
    <Modal
      open
      width={720}
      title={t(`scope.${action}.title`, { key: defKey })}
      onCancel={onClose}
      footer={
        <Space>
          <Button onClick={onClose} data-testid="scope-close">{result ? t("scope.close") : t("common:cancel")}</Button>
          {!result && (
            <Button type="primary" danger={action === "suspend"} disabled={!canRun} loading={run.isPending} onClick={() => run.mutate()} data-testid="scope-run">
              {t(`scope.${action}.run`, { n: plan?.count ?? 0 })}
            </Button>
          )}
        </Space>
      }
    >
      <div data-testid={`scope-dialog-${action}`}>
        <Typography.Paragraph type="secondary">{t(`scope.${action}.help`)}</Typography.Paragraph>
        <Form layout="vertical">
          <Space wrap>
            <Form.Item label={t("scope.node")}>
              <Select
                allowClear
                style={{ width: 220 }}
                value={node}
                placeholder={t("scope.anyNode")}
                onChange={(v: string | undefined) => setNode(v)}
                options={nodes.map((k) => ({ value: k, label: k }))}
                data-testid="scope-node"
                aria-label={t("scope.node")}
                disabled={!!result}
              />
            </Form.Item>
            {version != null && (
              <Form.Item label=" ">
                <Checkbox checked={onlyVersion} onChange={(e) => setOnlyVersion(e.target.checked)} disabled={!!result} data-testid="scope-only-version">
                  {t("scope.onlyVersion", { version })}
                </Checkbox>
              </Form.Item>
            )}
            <Form.Item label={t("common:batch.rate")} tooltip={t("common:batch.rateHelp")}>
              <InputNumber<number>
                min={1}
                max={200}
                precision={0}
                value={rate}
                onChange={(v) => setRate(v ?? null)}
                placeholder={t("common:batch.rateAtOnce")}
                addonAfter={t("common:batch.perSecond")}
                style={{ width: 190 }}
                data-testid="scope-rate"
                aria-label={t("common:batch.rate")}
                disabled={!!result}
              />
            </Form.Item>
          </Space>
          {preview.error ? <ErrorAlert error={preview.error} /> : null}
          {plan && !result && (
            <BatchPreview
              testId="scope-count"
              message={t(`scope.${action}.count`, { n: plan.count })}
              count={plan.count}
              sample={plan.sample}
              truncated={plan.truncated}
              skipped={Object.entries(plan.skippedByStatus).map(([s, n]) => ({ label: t(`common:status.${s}`), n }))}
              paced
              rate={plan.rate}
              estimatedCompletion={plan.estimatedCompletion}
            />
          )}
          <Form.Item label={action === "suspend" ? t("scope.reason") : t("scope.reasonOptional")} required={action === "suspend"}>
            <Input.TextArea rows={2} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} data-testid="scope-reason" disabled={!!result} />
          </Form.Item>
        </Form>
        {result && (
          <BatchResult<Item>
            type={result.totals.failed ? "error" : "success"}
            testId="scope-result"
            message={t("scope.result", {
              done: action === "suspend" ? result.totals.suspended : result.totals.resumed,
              verb: t(`scope.${action}.verb`),
              skipped: result.totals.skipped,
              failed: result.totals.failed,
            })}
            batchId={result.batchId}
            counts={result.counts}
            rowKey="instanceId"
            rows={result.results}
            columns={[
              { title: t("scope.col.instance"), dataIndex: "instanceId", render: (id: number) => <InstanceLink id={id} /> },
              resultColumn<Item>(t("scope.col.outcome"), (i) => ({ result: i.result, outcome: i.outcome, label: t(`scope.outcome.${i.outcome}`) })),
              { title: t("scope.col.why"), render: (_: unknown, i: Item) => i.reason ?? i.error?.message ?? "—" },
            ]}
          />
        )}
      </div>
    </Modal>
  );
}

export function ScopeSuspendButtons({ defKey, version, source }: { defKey: string; version: number | null; source: unknown }) {
  const { t } = useTranslation("definitions");
  const [open, setOpen] = useState<Action | null>(null);
  return (
    <>
      <Button onClick={() => setOpen("suspend")} data-testid="scope-suspend-open">{t("scope.suspend.open")}</Button>
      <Button onClick={() => setOpen("resume")} data-testid="scope-resume-open">{t("scope.resume.open")}</Button>
      {open && <ScopeDialog key={open} action={open} defKey={defKey} version={version} nodes={waitingNodes(source)} onClose={() => setOpen(null)} />}
    </>
  );
}
