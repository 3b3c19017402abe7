// The conditional replay (SPEC L-24): filters, a preview (matched count and
// samples), the rate (1–200/s) and the estimated completion window, then a
// progress view that follows the replay batch until none of it is queued.
import { useEffect, useState } from "react";
import { Button, Col, Descriptions, Form, Input, InputNumber, Modal, Progress, Row, Select, Space, Typography } from "antd";
import { useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import dayjs from "dayjs";
import { api, unwrap, type Schemas } from "../../api/client";
import { BatchCountsLine, BatchResult } from "../../components/BatchResult";
import { useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { StatusTag } from "../../components/StatusTag";
import { formatCount, formatDuration, formatRate } from "../../components/units";
import { replaySummaryQuery } from "../../api/queries/jobs";
import { validated } from "../../components/validated";

type Filter = Schemas["ReplayFilter"];
interface Values {
  types?: string[];
  statuses?: ("dead" | "failed")[];
  instanceId?: number | null;
  traceId?: string;
  keyword?: string;
  fingerprint?: string;
  ageSeconds?: number | null;
  limit: number;
  rate: number;
  reason?: string;
}

function toFilter(v: Values): Filter {
  return {
    types: v.types?.length ? v.types : null,
    statuses: v.statuses?.length ? v.statuses : null,
    instanceId: v.instanceId ?? null,
    traceId: v.traceId || null,
    keyword: v.keyword || null,
    fingerprint: v.fingerprint || null,
    ageSeconds: v.ageSeconds ?? null,
    limit: v.limit,
  };
}

export function estimatedSeconds(count: number, rate: number): number {
  return count <= 0 ? 0 : Math.ceil((count - 1) / rate);
}

function ReplayProgress({ replay }: { replay: Schemas["ReplayPublic"] }) {
  const { t } = useTranslation("jobs");
  const summary = useQuery({
    ...replaySummaryQuery(replay.replayBatchId),
    refetchInterval: (q) => {
      const by = q.state.data?.byStatus as Record<string, number> | undefined;
      return by && !(by.pending || by.running) ? false : 2_000;
    },
  });
  const by = (summary.data?.byStatus ?? {}) as Record<string, number>;
  // a very large batch's terminal counts may be the planner's estimate
  const rough = new Set(summary.data?.estimatedStatuses ?? []);
  const open = (by.pending ?? 0) + (by.running ?? 0);
  const total = summary.data?.total ?? replay.submitted;
  const finished = total - open;
  const done = summary.data !== undefined && open === 0;
  return (
    <Space direction="vertical" style={{ width: "100%" }} data-testid="replay-progress">
      <Descriptions size="small" column={2} bordered>
        <Descriptions.Item label={t("replay.batch")}>{replay.replayBatchId}</Descriptions.Item>
        <Descriptions.Item label={t("replay.submitted")}>{`${formatCount(replay.submitted)} / ${formatCount(replay.matched)}`}</Descriptions.Item>
        <Descriptions.Item label={t("replay.rate")}>{formatRate(replay.rate)}</Descriptions.Item>
        <Descriptions.Item label={t("replay.window")}>
          {`${formatTime(replay.estimatedCompletion.from)} – ${formatTime(replay.estimatedCompletion.to)}`}
        </Descriptions.Item>
      </Descriptions>
      <BatchCountsLine counts={replay.counts} />
      <Progress percent={total ? Math.round((finished / total) * 100) : 100} status={done ? "success" : "active"} />
      <Space wrap>
        {Object.entries(by).map(([status, count]) => (
          <span key={status} data-testid={`replay-count-${status}`}>
            <StatusTag status={status} /> {rough.has(status) ? "≈ " : ""}
            {formatCount(count)}
          </span>
        ))}
      </Space>
      <Typography.Text data-testid="replay-state">{done ? t("replay.finished") : t("replay.running")}</Typography.Text>
    </Space>
  );
}

export function ReplayDialog({ open, initial, types, onClose }: { open: boolean; initial: Partial<Values>; types: string[]; onClose: () => void }) {
  const { t } = useTranslation("jobs");
  const showError = useShowError();
  const [form] = Form.useForm<Values>();
  const [preview, setPreview] = useState<Schemas["ReplayPreviewPublic"] | null>(null);
  const [replay, setReplay] = useState<Schemas["ReplayPublic"] | null>(null);
  const [busy, setBusy] = useState(false);
  const rate = Form.useWatch("rate", form) ?? 20;

  useEffect(() => {
    if (open) {
      form.setFieldsValue({ statuses: ["dead"], limit: 500, rate: 20, ...initial });
      setPreview(null);
      setReplay(null);
    }
  }, [open, initial, form]);

  async function runPreview() {
    const values = await validated(form);
    if (!values) return;
    setBusy(true);
    try {
      setPreview(await unwrap(api.POST("/api/workflows/engine/jobs/replay-preview", { body: toFilter(values) })));
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
    }
  }

  async function submit() {
    const values = await validated(form);
    if (!values) return;
    setBusy(true);
    try {
      setReplay(await unwrap(api.POST("/api/workflows/engine/jobs/replay-dead", { body: { ...toFilter(values), rate: values.rate, reason: values.reason || null } })));
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
    }
  }

  const seconds = preview ? estimatedSeconds(preview.wouldSubmit, rate) : 0;
  return (
    <Modal
      open={open}
      width={860}
      title={t("replay.title")}
      onCancel={onClose}
      destroyOnClose
      footer={
        replay ? (
          <Button onClick={onClose} data-testid="replay-close">{t("common:close")}</Button>
        ) : (
          <Space>
            <Button onClick={onClose}>{t("common:cancel")}</Button>
            <Button onClick={runPreview} loading={busy} data-testid="replay-preview">{t("replay.preview")}</Button>
            <Button type="primary" disabled={!preview || preview.wouldSubmit === 0} loading={busy} onClick={submit} data-testid="replay-submit">
              {t("replay.submit", { n: formatCount(preview?.wouldSubmit ?? 0) })}
            </Button>
          </Space>
        )
      }
    >
      {replay ? (
        <ReplayProgress replay={replay} />
      ) : (
        <Form form={form} layout="vertical" onValuesChange={() => setPreview(null)}>
          <Row gutter={12}>
            <Col span={12}>
              <Form.Item name="types" label={t("filter.type")}>
                <Select mode="multiple" allowClear options={types.map((v) => ({ value: v, label: v }))} />
              </Form.Item>
            </Col>
            <Col span={12}>
              <Form.Item name="statuses" label={t("filter.status")}>
                <Select mode="multiple" options={["dead", "failed"].map((s) => ({ value: s, label: t(`common:status.${s}`) }))} />
              </Form.Item>
            </Col>
            <Col span={8}>
              <Form.Item name="instanceId" label={t("filter.instance")}>
                <InputNumber min={1} style={{ width: "100%" }} />
              </Form.Item>
            </Col>
            <Col span={8}>
              <Form.Item name="keyword" label={t("filter.keyword")}>
                <Input />
              </Form.Item>
            </Col>
            <Col span={8}>
              <Form.Item name="ageSeconds" label={t("replay.ageSeconds")}>
                <InputNumber min={1} style={{ width: "100%" }} />
              </Form.Item>
            </Col>
            <Col span={12}>
              <Form.Item name="traceId" label={t("filter.traceId")}>
                <Input />
              </Form.Item>
            </Col>
            <Col span={12}>
              <Form.Item name="fingerprint" label={t("filter.fingerprint")}>
                <Input />
              </Form.Item>
            </Col>
            <Col span={8}>
              <Form.Item name="limit" label={t("replay.limit")} rules={[{ required: true }]}>
                <InputNumber min={1} max={500} style={{ width: "100%" }} />
              </Form.Item>
            </Col>
            <Col span={8}>
              <Form.Item name="rate" label={t("replay.rate")} rules={[{ required: true, type: "number", min: 1, max: 200, message: t("replay.rateRange") }]}>
                <InputNumber min={1} max={200} style={{ width: "100%" }} addonAfter={t("replay.perSecond")} data-testid="replay-rate" />
              </Form.Item>
            </Col>
            <Col span={8}>
              <Form.Item name="reason" label={t("action.reason")}>
                <Input />
              </Form.Item>
            </Col>
          </Row>
          {preview && (
            <Space direction="vertical" style={{ width: "100%" }} data-testid="replay-preview-result">
              <BatchResult<Schemas["ReplaySample"]>
                type={preview.wouldSubmit ? "info" : "warning"}
                message={t("replay.previewSummary", { matched: `${preview.matchedEstimated ? "≈ " : ""}${formatCount(preview.matched)}`, wouldSubmit: formatCount(preview.wouldSubmit) })}
                description={
                  preview.wouldSubmit
                    ? t("replay.estimate", {
                        duration: formatDuration(seconds * 1000),
                        from: formatTime(dayjs().toISOString()),
                        to: formatTime(dayjs().add(seconds, "second").toISOString()),
                      })
                    : undefined
                }
                rowKey="id"
                pageSize={100}
                rows={preview.samples}
                columns={[
                  { title: t("col.id"), dataIndex: "id" },
                  { title: t("col.type"), dataIndex: "type" },
                  { title: t("col.status"), dataIndex: "status", render: (s: string) => <StatusTag status={s} /> },
                  { title: t("detail.lastError"), dataIndex: "lastError", ellipsis: true },
                  { title: t("col.createdAt"), dataIndex: "createdAt", render: formatTime },
                ]}
              />
            </Space>
          )}
        </Form>
      )}
    </Modal>
  );
}
