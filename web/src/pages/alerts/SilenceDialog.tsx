// Create a silence (SPEC O-22): a matcher (rule, metric, tenant — every field
// named must equal the rule's), a window (start, default now; a duration or
// an end) and the comment. A 422 is shown on the field it names.
import { useEffect } from "react";
import { App, DatePicker, Form, Input, Modal, Select } from "antd";
import type { Dayjs } from "dayjs";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap } from "../../api/client";
import { setFieldError, useShowError } from "../../components/errors";
import { useMetricLabel, useMetrics } from "./labels";
import { alertKeys, allAlertRulesQuery } from "../../api/queries/alerts";
import { validated } from "../../components/validated";

export interface SilencePreset {
  ruleId?: number;
}

interface Values {
  ruleId?: number;
  metric?: string;
  tenant?: string;
  startsAt?: Dayjs | null;
  duration?: string;
  endsAt?: Dayjs | null;
  comment: string;
}

const FIELDS: (keyof Values)[] = ["ruleId", "metric", "tenant", "startsAt", "duration", "endsAt", "comment"];
const ALIASES: Record<string, keyof Values> = { "matcher.ruleId": "ruleId", "matcher.metric": "metric", "matcher.tenant": "tenant" };

export function SilenceDialog({ preset, onClose }: { preset: SilencePreset | null; onClose: () => void }) {
  const { t } = useTranslation("alerts");
  const { message } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const metrics = useMetrics();
  const metricLabel = useMetricLabel();
  const [form] = Form.useForm<Values>();
  const rules = useQuery({
    ...allAlertRulesQuery(),
    enabled: preset !== null,
  });

  useEffect(() => {
    if (preset === null) return;
    form.resetFields();
    form.setFieldsValue({ ruleId: preset.ruleId, duration: "2h" });
  }, [preset, form]);

  async function save() {
    const v = await validated(form);
    if (!v) return;
    const ends = v.endsAt ? v.endsAt.toISOString() : null;
    const body = {
      matcher: { ruleId: v.ruleId ?? null, metric: v.metric ?? null, tenant: v.tenant?.trim() || null },
      startsAt: v.startsAt ? v.startsAt.toISOString() : null,
      ...(ends ? { endsAt: ends } : { duration: v.duration?.trim() || null }),
      comment: v.comment,
    };
    try {
      const created = await unwrap(api.POST("/api/workflows/engine/alerts/silences", { body }));
      message.success(t("silence.created", { id: created.id }));
      onClose();
      await client.invalidateQueries({ queryKey: alertKeys.silences() });
    } catch (e) {
      if (!setFieldError(form, e, FIELDS, ALIASES)) showError(e);
    }
  }

  return (
    <Modal
      width={600}
      open={preset !== null}
      title={t("silence.create")}
      onCancel={onClose}
      onOk={save}
      okText={t("common:create")}
      cancelText={t("common:cancel")}
      okButtonProps={{ "data-testid": "silence-save" } as Record<string, string>}
      forceRender
    >
      <Form form={form} layout="vertical" data-testid="silence-form">
        <Form.Item name="ruleId" label={t("silence.rule")} extra={t("silence.matcherHint")}>
          <Select
            allowClear
            showSearch
            optionFilterProp="label"
            data-testid="silence-rule"
            loading={rules.isLoading}
            options={(rules.data?.items ?? []).map((r) => ({ value: r.id, label: `#${r.id} ${r.name}` }))}
          />
        </Form.Item>
        <Form.Item name="metric" label={t("rule.metric")}>
          <Select allowClear data-testid="silence-metric" options={(metrics.data?.items ?? []).map((m) => ({ value: m.metric, label: metricLabel(m.metric) }))} />
        </Form.Item>
        <Form.Item name="tenant" label={t("rule.tenant")}>
          <Input data-testid="silence-tenant" placeholder={t("silence.anyTenant")} />
        </Form.Item>
        <Form.Item name="startsAt" label={t("silence.startsAt")} extra={t("silence.startsAtHint")}>
          <DatePicker showTime data-testid="silence-starts" />
        </Form.Item>
        <Form.Item name="duration" label={t("silence.duration")} extra={t("silence.durationHint")}>
          <Input data-testid="silence-duration" placeholder="2h" />
        </Form.Item>
        <Form.Item name="endsAt" label={t("silence.endsAt")}>
          <DatePicker showTime data-testid="silence-ends" />
        </Form.Item>
        <Form.Item name="comment" label={t("silence.comment")} rules={[{ required: true, message: t("required") }]}>
          <Input.TextArea rows={2} data-testid="silence-comment" />
        </Form.Item>
      </Form>
    </Modal>
  );
}
