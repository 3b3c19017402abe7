// Connectors (SPEC X-3): list, create and edit; a secret is write-only.
import { useState } from "react";
import { App, Button, Form, Input, InputNumber, Modal, Select, Space, Switch } from "antd";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { useListState } from "../../components/useListState";
import { ActionLink } from "../../components/ActionLink";
import { formatRate } from "../../components/units";
import { connectorsQuery, integrationKeys } from "../../api/queries/integrations";
import { PagedList } from "../../components/PagedList";
import { validated } from "../../components/validated";

type Connector = Schemas["ConnectorPublic"];
type AuthKind = "none" | "bearer" | "basic" | "api_key" | "hmac";
interface Values {
  key: string;
  name: string;
  baseUrl: string;
  authKind: AuthKind;
  username?: string;
  headerName?: string;
  secret?: string;
  enabled: boolean;
  requestsPerSecond?: number | null;
}

export function ConnectorsTab() {
  const { t } = useTranslation("integrations");
  const { message } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const { pager } = useListState(undefined, { cursor: "connectorsCursor" });
  const [editing, setEditing] = useState<Connector | "new" | null>(null);
  const [form] = Form.useForm<Values>();
  const list = useQuery({
    ...connectorsQuery(pager.cursor),
    placeholderData: keepPreviousData,
  });

  function open(c: Connector | "new") {
    setEditing(c);
    form.resetFields();
    if (c === "new") form.setFieldsValue({ authKind: "none", enabled: true });
    else form.setFieldsValue({ ...c, authKind: c.authKind as AuthKind, username: c.username ?? undefined, headerName: c.headerName ?? undefined, requestsPerSecond: c.rateLimit?.requestsPerSecond ?? null });
  }

  async function save() {
    const v = await validated(form);
    if (!v) return;
    const rateLimit = v.requestsPerSecond ? { requestsPerSecond: v.requestsPerSecond } : null;
    const common = { name: v.name, baseUrl: v.baseUrl, authKind: v.authKind, username: v.username || null, headerName: v.headerName || null, enabled: v.enabled, rateLimit };
    try {
      if (editing === "new") {
        await unwrap(api.POST("/api/workflows/connectors", { body: { ...common, key: v.key, secret: v.secret || null } }));
      } else if (editing) {
        await unwrap(api.PATCH("/api/workflows/connectors/{connectorId}", { params: { path: { connectorId: editing.id } }, body: { ...common, ...(v.secret ? { secret: v.secret } : {}) } }));
      }
      message.success(t("connector.saved", { name: v.name }));
      setEditing(null);
      await client.invalidateQueries({ queryKey: integrationKeys.connectors() });
    } catch (e) {
      showError(e);
    }
  }

  return (
    <div data-testid="connectors-tab">
      <Space style={{ marginBottom: 12 }}>
        <Button type="primary" onClick={() => open("new")} data-testid="connector-create">{t("connector.create")}</Button>
      </Space>
      <PagedList<Connector>
        testId="connectors-table"
        main
        query={list}
        pager={pager}
        columns={[
          { title: t("connector.key"), dataIndex: "key" },
          { title: t("connector.name"), dataIndex: "name" },
          { title: t("connector.baseUrl"), dataIndex: "baseUrl", ellipsis: true },
          { title: t("connector.authKind"), dataIndex: "authKind", render: (v: string) => t(`auth.${v}`) },
          { title: t("connector.secret"), dataIndex: "hasSecret", render: (v: boolean) => (v ? t("common:yes") : t("common:no")) },
          { title: t("connector.rateLimit"), render: (_, c) => (c.rateLimit ? formatRate(c.rateLimit.requestsPerSecond) : "—") },
          { title: t("connector.enabled"), dataIndex: "enabled", render: (v: boolean) => (v ? t("common:enabled") : t("common:disabled")) },
          { title: t("connector.updatedAt"), dataIndex: "updatedAt", width: 170, render: formatTime },
          { title: "", render: (_, c) => <ActionLink onClick={() => open(c)} data-testid={`connector-edit-${c.id}`}>{t("common:edit")}</ActionLink> },
        ]}
      />
      <Modal open={editing !== null} title={editing === "new" ? t("connector.create") : t("connector.edit")} onCancel={() => setEditing(null)} onOk={save} okText={t("common:save")} cancelText={t("common:cancel")} okButtonProps={{ "data-testid": "connector-save" } as Record<string, string>} forceRender>
        <Form form={form} layout="vertical">
          <Form.Item name="key" label={t("connector.key")} rules={[{ required: true, message: t("required") }]}>
            <Input disabled={editing !== "new"} data-testid="connector-key" />
          </Form.Item>
          <Form.Item name="name" label={t("connector.name")} rules={[{ required: true, message: t("required") }]}>
            <Input data-testid="connector-name" />
          </Form.Item>
          <Form.Item name="baseUrl" label={t("connector.baseUrl")} rules={[{ required: true, message: t("required") }]}>
            <Input placeholder="https://erp.example.com/api" data-testid="connector-url" />
          </Form.Item>
          <Form.Item name="authKind" label={t("connector.authKind")}>
            <Select options={(["none", "bearer", "basic", "api_key", "hmac"] as AuthKind[]).map((k) => ({ value: k, label: t(`auth.${k}`) }))} />
          </Form.Item>
          <Form.Item name="username" label={t("connector.username")}>
            <Input />
          </Form.Item>
          <Form.Item name="headerName" label={t("connector.headerName")}>
            <Input />
          </Form.Item>
          <Form.Item name="secret" label={t("connector.secret")} extra={t("connector.secretHint")}>
            <Input.Password autoComplete="new-password" />
          </Form.Item>
          <Form.Item name="requestsPerSecond" label={t("connector.rateLimit")}>
            <InputNumber min={0.1} step={1} addonAfter={t("connector.perSecond")} />
          </Form.Item>
          <Form.Item name="enabled" label={t("connector.enabled")} valuePropName="checked">
            <Switch />
          </Form.Item>
        </Form>
      </Modal>
    </div>
  );
}
