// Automation rules (SPEC X-6): list, create and edit (event types, the
// condition, the actions as JSON — the API validates and names the field).
import { useState } from "react";
import { App, Button, Form, Input, Modal, Select, Space, Switch } from "antd";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { EVENT_TYPE_SUGGESTIONS } from "../../components/EventTypes";
import { useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { useListState } from "../../components/useListState";
import { ActionLink } from "../../components/ActionLink";
import { automationRulesQuery, integrationKeys } from "../../api/queries/integrations";
import { PagedList } from "../../components/PagedList";
import { validated } from "../../components/validated";

type Rule = Schemas["AutomationRulePublic"];
type Action = Schemas["AutomationRuleCreate"]["actions"][number];
interface Values {
  name: string;
  eventTypes: string[];
  definitionKey?: string;
  condition?: string;
  enabled: boolean;
  actions: string;
}

const EXAMPLE = JSON.stringify([{ type: "notify", channel: "inApp", recipients: ["admin"], title: "Approved", bodyTemplate: "Instance {{ system.instanceId }} approved" }], null, 2);

export function RulesTab() {
  const { t } = useTranslation("integrations");
  const { message } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const { pager } = useListState(undefined, { cursor: "rulesCursor" });
  const [editing, setEditing] = useState<Rule | "new" | null>(null);
  const [form] = Form.useForm<Values>();
  const list = useQuery({
    ...automationRulesQuery(pager.cursor),
    placeholderData: keepPreviousData,
  });

  function open(r: Rule | "new") {
    setEditing(r);
    form.resetFields();
    if (r === "new") form.setFieldsValue({ enabled: true, eventTypes: ["instance.approved"], actions: EXAMPLE });
    else form.setFieldsValue({ name: r.name, eventTypes: r.eventTypes, definitionKey: r.definitionKey ?? undefined, condition: r.condition ?? undefined, enabled: r.enabled, actions: JSON.stringify(r.actions, null, 2) });
  }

  async function save() {
    const v = await validated(form);
    if (!v) return;
    let actions: Action[];
    try {
      actions = JSON.parse(v.actions) as Action[];
    } catch {
      form.setFields([{ name: "actions", errors: [t("rule.actionsInvalid")] }]);
      return;
    }
    const body = { name: v.name, eventTypes: v.eventTypes, definitionKey: v.definitionKey || null, condition: v.condition || null, enabled: v.enabled, actions };
    try {
      if (editing === "new") await unwrap(api.POST("/api/workflows/automation-rules", { body }));
      else if (editing) await unwrap(api.PATCH("/api/workflows/automation-rules/{ruleId}", { params: { path: { ruleId: editing.id } }, body }));
      message.success(t("rule.saved", { name: v.name }));
      setEditing(null);
      await client.invalidateQueries({ queryKey: integrationKeys.rules() });
    } catch (e) {
      showError(e);
    }
  }

  async function toggle(r: Rule, enabled: boolean) {
    try {
      await unwrap(api.PATCH("/api/workflows/automation-rules/{ruleId}", { params: { path: { ruleId: r.id } }, body: { enabled } }));
      await client.invalidateQueries({ queryKey: integrationKeys.rules() });
    } catch (e) {
      showError(e);
    }
  }

  return (
    <div data-testid="rules-tab">
      <Space style={{ marginBottom: 12 }}>
        <Button type="primary" onClick={() => open("new")} data-testid="rule-create">{t("rule.create")}</Button>
      </Space>
      <PagedList<Rule>
        testId="rules-table"
        main
        query={list}
        pager={pager}
        columns={[
          { title: t("rule.name"), dataIndex: "name" },
          { title: t("rule.eventTypes"), dataIndex: "eventTypes", render: (v: string[]) => v.join(", ") },
          { title: t("rule.definition"), dataIndex: "definitionKey", render: (v: string | null) => v ?? t("rule.anyDefinition") },
          { title: t("rule.condition"), dataIndex: "condition", ellipsis: true, render: (v: string | null) => v ?? "—" },
          { title: t("rule.actions"), dataIndex: "actions", render: (a: { type?: string }[]) => a.map((x) => x.type).join(", ") },
          { title: t("rule.enabled"), dataIndex: "enabled", render: (v: boolean, r) => <Switch checked={v} onChange={(on) => toggle(r, on)} aria-label={`${t("rule.enabled")}: ${r.name}`} data-testid={`rule-enabled-${r.id}`} /> },
          { title: t("rule.updatedAt"), dataIndex: "updatedAt", width: 170, render: formatTime },
          { title: "", render: (_, r) => <ActionLink onClick={() => open(r)} data-testid={`rule-edit-${r.id}`}>{t("common:edit")}</ActionLink> },
        ]}
      />
      <Modal width={720} open={editing !== null} title={editing === "new" ? t("rule.create") : t("rule.edit")} onCancel={() => setEditing(null)} onOk={save} okText={t("common:save")} cancelText={t("common:cancel")} okButtonProps={{ "data-testid": "rule-save" } as Record<string, string>} forceRender>
        <Form form={form} layout="vertical">
          <Form.Item name="name" label={t("rule.name")} rules={[{ required: true, message: t("required") }]}>
            <Input data-testid="rule-name" />
          </Form.Item>
          <Form.Item name="eventTypes" label={t("rule.eventTypes")} rules={[{ required: true, message: t("required") }]}>
            <Select mode="tags" options={EVENT_TYPE_SUGGESTIONS} />
          </Form.Item>
          <Form.Item name="definitionKey" label={t("rule.definition")}>
            <Input placeholder={t("rule.anyDefinition")} />
          </Form.Item>
          <Form.Item name="condition" label={t("rule.condition")}>
            <Input placeholder="form.amount > 1000" data-testid="rule-condition" />
          </Form.Item>
          <Form.Item name="actions" label={t("rule.actions")} rules={[{ required: true, message: t("required") }]} extra={t("rule.actionsHint")}>
            <Input.TextArea rows={8} style={{ fontFamily: "monospace" }} data-testid="rule-actions" />
          </Form.Item>
          <Form.Item name="enabled" label={t("rule.enabled")} valuePropName="checked">
            <Switch />
          </Form.Item>
        </Form>
      </Modal>
    </div>
  );
}
