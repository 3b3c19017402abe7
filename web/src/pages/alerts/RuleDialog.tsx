// Create or edit an alert rule (SPEC O-22): metric (from the API's list),
// comparison, threshold, `for`, severity, channels (email, webhook, in-app)
// and the tenant (on create only: it never changes). A 422 is shown on the
// field it names; a generated webhook secret is shown once after saving.
import { useEffect } from "react";
import { App, Form, Input, Modal, Select, Switch, Typography } from "antd";
import { useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { setFieldError, useShowError } from "../../components/errors";
import { COMPARISONS, SEVERITIES, formatValue, useMetricLabel, useMetrics, useUnit } from "./labels";
import { alertKeys } from "../../api/queries/alerts";
import { validated } from "../../components/validated";

type Rule = Schemas["RulePublic"];
type Comparison = Schemas["RuleCreate"]["comparison"];
type Severity = NonNullable<Schemas["RuleCreate"]["severity"]>;

interface Values {
  name: string;
  metric: string;
  comparison: Comparison;
  threshold: string;
  for: string;
  severity: Severity;
  email: string[];
  webhookUrl?: string;
  webhookSecret?: string;
  inApp: string[];
  tenant?: string;
  enabled: boolean;
}

const FIELDS: (keyof Values)[] = ["name", "metric", "comparison", "threshold", "for", "severity", "email", "webhookUrl", "webhookSecret", "inApp", "tenant", "enabled"];
const ALIASES: Record<string, keyof Values> = {
  forSeconds: "for",
  "channels.email": "email",
  "channels.inApp": "inApp",
  "channels.webhook": "webhookUrl",
  "channels.webhook.secret": "webhookSecret",
};

/** The threshold as typed: a number when it reads as one, else the text, so the API names the field. */
function threshold(text: string): number {
  const n = Number(text.trim());
  return (text.trim() !== "" && Number.isFinite(n) ? n : text) as number;
}

export function RuleDialog({ rule, onClose }: { rule: Rule | "new" | null; onClose: () => void }) {
  const { t } = useTranslation("alerts");
  const { message, modal } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const metrics = useMetrics();
  const metricLabel = useMetricLabel();
  const unit = useUnit();
  const [form] = Form.useForm<Values>();

  useEffect(() => {
    if (rule === null) return;
    form.resetFields();
    if (rule === "new") {
      form.setFieldsValue({ comparison: "gt", for: "5m", severity: "warning", email: [], inApp: [], enabled: true });
    } else {
      form.setFieldsValue({
        name: rule.name,
        metric: rule.metric,
        comparison: rule.comparison as Comparison,
        threshold: String(rule.threshold),
        for: rule.for,
        severity: rule.severity as Severity,
        email: rule.channels.email,
        webhookUrl: rule.channels.webhook?.url,
        inApp: rule.channels.inApp,
        enabled: rule.enabled,
      });
    }
  }, [rule, form]);

  async function save() {
    const v = await validated(form);
    if (!v) return;
    const base = { name: v.name, metric: v.metric, comparison: v.comparison, threshold: threshold(v.threshold), for: v.for || 0, severity: v.severity, enabled: v.enabled };
    const url = v.webhookUrl?.trim() || null;
    const webhook = url ? { url, ...(v.webhookSecret ? { secret: v.webhookSecret } : {}) } : null;
    try {
      if (rule === "new") {
        const tenant = v.tenant?.trim();
        const created = await unwrap(
          api.POST("/api/workflows/engine/alerts/rules", { body: { ...base, channels: { email: v.email, inApp: v.inApp, webhook }, ...(tenant ? { tenant } : {}) } }),
        );
        if (created.webhookSecret) {
          modal.info({
            title: t("rule.secretTitle"),
            content: (
              <Typography.Paragraph copyable code data-testid="webhook-secret">
                {created.webhookSecret}
              </Typography.Paragraph>
            ),
          });
        }
      } else if (rule) {
        const webhookChanged = (rule.channels.webhook?.url ?? null) !== url || !!v.webhookSecret;
        await unwrap(
          api.PATCH("/api/workflows/engine/alerts/rules/{ruleId}", {
            params: { path: { ruleId: rule.id } },
            body: { ...base, channels: { email: v.email, inApp: v.inApp, ...(webhookChanged ? { webhook } : {}) } },
          }),
        );
      }
      message.success(t("rule.saved", { name: v.name }));
      onClose();
      await client.invalidateQueries({ queryKey: alertKeys.rules() });
    } catch (e) {
      if (!setFieldError(form, e, FIELDS, ALIASES)) showError(e);
    }
  }

  const required = [{ required: true, message: t("required") }];
  return (
    <Modal
      width={640}
      open={rule !== null}
      title={rule === "new" ? t("rule.create") : t("rule.edit")}
      onCancel={onClose}
      onOk={save}
      okText={t("common:save")}
      cancelText={t("common:cancel")}
      okButtonProps={{ "data-testid": "rule-save" } as Record<string, string>}
      forceRender
    >
      <Form form={form} layout="vertical" data-testid="rule-form">
        <Form.Item name="name" label={t("rule.name")} rules={required}>
          <Input data-testid="rule-name" />
        </Form.Item>
        <Form.Item name="metric" label={t("rule.metric")} rules={required}>
          <Select
            data-testid="rule-metric"
            loading={metrics.isLoading}
            options={(metrics.data?.items ?? []).map((m) => ({
              value: m.metric,
              label: t("rule.metricOption", { name: metricLabel(m.metric), unit: unit(m.unit), value: formatValue(m.value) }),
            }))}
          />
        </Form.Item>
        <Form.Item label={t("rule.condition")} required style={{ marginBottom: 0 }}>
          <Form.Item name="comparison" rules={required} style={{ display: "inline-block", width: 110, marginRight: 8 }}>
            <Select data-testid="rule-comparison" options={Object.entries(COMPARISONS).map(([value, label]) => ({ value, label }))} />
          </Form.Item>
          <Form.Item name="threshold" rules={required} style={{ display: "inline-block", width: "calc(100% - 118px)" }}>
            <Input data-testid="rule-threshold" placeholder={t("rule.thresholdHint")} />
          </Form.Item>
        </Form.Item>
        <Form.Item name="for" label={t("rule.for")} extra={t("rule.forHint")}>
          <Input data-testid="rule-for" placeholder="5m" />
        </Form.Item>
        <Form.Item name="severity" label={t("rule.severity")}>
          <Select data-testid="rule-severity" options={SEVERITIES.map((s) => ({ value: s, label: t(`severity.${s}`) }))} />
        </Form.Item>
        <Form.Item name="email" label={t("rule.email")}>
          <Select mode="tags" data-testid="rule-email" tokenSeparators={[",", " "]} open={false} placeholder="ops@example.com" />
        </Form.Item>
        <Form.Item name="webhookUrl" label={t("rule.webhookUrl")}>
          <Input data-testid="rule-webhook" placeholder="https://alerts.example.com/flowledger" />
        </Form.Item>
        <Form.Item name="webhookSecret" label={t("rule.webhookSecret")} extra={t("rule.webhookSecretHint")}>
          <Input.Password data-testid="rule-webhook-secret" autoComplete="new-password" />
        </Form.Item>
        <Form.Item name="inApp" label={t("rule.inApp")}>
          <Select mode="tags" data-testid="rule-inapp" tokenSeparators={[",", " "]} open={false} />
        </Form.Item>
        {rule === "new" && (
          <Form.Item name="tenant" label={t("rule.tenant")} extra={t("rule.tenantHint")}>
            <Input data-testid="rule-tenant" />
          </Form.Item>
        )}
        <Form.Item name="enabled" label={t("common:enabled")} valuePropName="checked">
          <Switch data-testid="rule-enabled" />
        </Form.Item>
      </Form>
    </Modal>
  );
}
