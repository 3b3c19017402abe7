// 事件订阅 (Event subscriptions, SPEC X-5): create / edit / delete with the
// secret shown once, enable/disable, and each subscription's hits and
// deliveries with status and error.
import { useState } from "react";
import { Alert, App, Button, Drawer, Form, Input, Modal, Popconfirm, Select, Space, Switch, Typography } from "antd";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { EVENT_TYPE_SUGGESTIONS } from "../../components/EventTypes";
import { useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { StatusTag } from "../../components/StatusTag";
import { useListState } from "../../components/useListState";
import { ActionLink } from "../../components/ActionLink";
import { hitsQuery, subscriptionKeys, subscriptionsQuery } from "../../api/queries/subscriptions";
import { PagedList } from "../../components/PagedList";
import { validated } from "../../components/validated";

type Sub = Schemas["SubscriptionPublic"];
type HitStatus = "pending" | "delivered" | "failed" | "skipped";
const HIT_STATUSES: HitStatus[] = ["pending", "delivered", "failed", "skipped"];
// the hits drawer is not in the URL: its filter and page are kept in memory
const HIT_FILTERS = { status: "one" } as const;
interface Values {
  name: string;
  targetUrl: string;
  eventTypes: string[];
  definitionKey?: string;
  enabled: boolean;
}

function Hits({ sub, onClose }: { sub: Sub; onClose: () => void }) {
  const { t } = useTranslation("subscriptions");
  const { values, pager, set } = useListState(HIT_FILTERS, { memory: true });
  const status = HIT_STATUSES.find((s) => s === values.status);
  const hits = useQuery({
    ...hitsQuery(sub.id, status, pager.cursor),
    placeholderData: keepPreviousData,
  });
  return (
    <Drawer open onClose={onClose} width={900} title={t("hits.title", { name: sub.name })} data-testid="hits-drawer">
      <Space style={{ marginBottom: 12 }}>
        {t("hits.status")}
        <Select allowClear style={{ width: 160 }} value={status} onChange={(s) => set({ status: s })} aria-label={t("hits.status")} options={HIT_STATUSES.map((s) => ({ value: s, label: t(`common:status.${s}`) }))} />
      </Space>
      <PagedList
        testId="hits-table"
        query={hits}
        pager={pager}
        columns={[
          { title: t("hits.event"), render: (_, h) => `${h.eventType} #${h.eventId}` },
          { title: t("hits.instance"), dataIndex: "instanceId", render: (v: number | null) => v ?? "—" },
          { title: t("hits.status"), dataIndex: "status", render: (s: string) => <StatusTag status={s} /> },
          { title: t("hits.response"), dataIndex: "responseStatus", render: (v: number | null) => v ?? "—" },
          { title: t("hits.error"), dataIndex: "lastError", ellipsis: true, render: (v: string | null) => v ?? "—" },
          { title: t("hits.job"), dataIndex: "jobId", render: (v: number | null) => (v ? <Link to={`/monitor/jobs?job=${v}`}>#{v}</Link> : "—") },
          { title: t("hits.updatedAt"), dataIndex: "updatedAt", width: 170, render: formatTime },
        ]}
      />
    </Drawer>
  );
}

export default function SubscriptionsPage() {
  const { t } = useTranslation("subscriptions");
  const { message } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const { pager } = useListState();
  const [editing, setEditing] = useState<Sub | "new" | null>(null);
  const [hitsOf, setHitsOf] = useState<Sub | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [form] = Form.useForm<Values>();
  const subs = useQuery({
    ...subscriptionsQuery(pager.cursor),
    placeholderData: keepPreviousData,
  });
  const refresh = () => client.invalidateQueries({ queryKey: subscriptionKeys.lists() });

  function open(sub: Sub | "new") {
    setEditing(sub);
    form.setFieldsValue(sub === "new" ? { name: "", targetUrl: "", eventTypes: [], definitionKey: "", enabled: true } : { ...sub, definitionKey: sub.definitionKey ?? "" });
  }

  async function save() {
    const v = await validated(form);
    if (!v) return;
    const body = { ...v, definitionKey: v.definitionKey || null };
    try {
      if (editing === "new") {
        const created = await unwrap(api.POST("/api/workflows/subscriptions", { body }));
        setSecret(created.secret ?? null);
      } else if (editing) {
        await unwrap(api.PATCH("/api/workflows/subscriptions/{subscriptionId}", { params: { path: { subscriptionId: editing.id } }, body }));
        message.success(t("saved"));
      }
      setEditing(null);
      await refresh();
    } catch (e) {
      showError(e);
    }
  }

  async function toggle(sub: Sub, enabled: boolean) {
    try {
      await unwrap(api.PATCH("/api/workflows/subscriptions/{subscriptionId}", { params: { path: { subscriptionId: sub.id } }, body: { enabled } }));
      await refresh();
    } catch (e) {
      showError(e);
    }
  }

  async function remove(sub: Sub) {
    try {
      await unwrap(api.DELETE("/api/workflows/subscriptions/{subscriptionId}", { params: { path: { subscriptionId: sub.id } } }));
      message.success(t("deleted", { name: sub.name }));
      await refresh();
    } catch (e) {
      showError(e);
    }
  }

  return (
    <div data-testid="page-subscriptions">
      <Space style={{ marginBottom: 12 }}>
        <Button type="primary" onClick={() => open("new")} data-testid="subscription-create">{t("create")}</Button>
      </Space>
      <PagedList<Sub>
        testId="subscriptions-table"
        main
        query={subs}
        pager={pager}
        columns={[
          { title: t("col.name"), dataIndex: "name" },
          { title: t("col.targetUrl"), dataIndex: "targetUrl", ellipsis: true },
          { title: t("col.eventTypes"), dataIndex: "eventTypes", render: (v: string[]) => v.join(", ") },
          { title: t("col.definition"), dataIndex: "definitionKey", render: (v: string | null) => v ?? t("col.anyDefinition") },
          { title: t("col.secret"), dataIndex: "hasSecret", render: (v: boolean) => (v ? t("common:yes") : t("common:no")) },
          {
            title: t("col.enabled"),
            dataIndex: "enabled",
            render: (v: boolean, s) => <Switch checked={v} onChange={(on) => toggle(s, on)} aria-label={`${t("col.enabled")}: ${s.name}`} data-testid={`subscription-enabled-${s.id}`} />,
          },
          {
            title: "",
            width: 260,
            render: (_, s) => (
              <Space>
                <ActionLink onClick={() => setHitsOf(s)} data-testid={`subscription-hits-${s.id}`}>{t("hits.open")}</ActionLink>
                <ActionLink onClick={() => open(s)} data-testid={`subscription-edit-${s.id}`}>{t("common:edit")}</ActionLink>
                <Popconfirm title={t("deleteConfirm", { name: s.name })} onConfirm={() => remove(s)} okText={t("common:delete")} cancelText={t("common:cancel")} okButtonProps={{ "data-testid": "delete-ok" } as Record<string, string>}>
                  <ActionLink data-testid={`subscription-delete-${s.id}`}>{t("common:delete")}</ActionLink>
                </Popconfirm>
              </Space>
            ),
          },
        ]}
      />
      <Modal open={editing !== null} title={editing === "new" ? t("create") : t("editTitle")} onCancel={() => setEditing(null)} onOk={save} okText={t("common:save")} cancelText={t("common:cancel")} okButtonProps={{ "data-testid": "subscription-save" } as Record<string, string>} forceRender>
        <Form form={form} layout="vertical">
          <Form.Item name="name" label={t("col.name")} rules={[{ required: true, message: t("required") }]}>
            <Input data-testid="subscription-name" />
          </Form.Item>
          <Form.Item name="targetUrl" label={t("col.targetUrl")} rules={[{ required: true, message: t("required") }]}>
            <Input placeholder="https://example.com/hooks/flowledger" data-testid="subscription-url" />
          </Form.Item>
          <Form.Item name="eventTypes" label={t("col.eventTypes")} rules={[{ required: true, message: t("required") }]}>
            <Select mode="tags" options={EVENT_TYPE_SUGGESTIONS} data-testid="subscription-events" />
          </Form.Item>
          <Form.Item name="definitionKey" label={t("col.definition")}>
            <Input placeholder={t("col.anyDefinition")} />
          </Form.Item>
          <Form.Item name="enabled" label={t("col.enabled")} valuePropName="checked">
            <Switch />
          </Form.Item>
        </Form>
      </Modal>
      <Modal open={secret !== null} title={t("secret.title")} onCancel={() => setSecret(null)} footer={<Button onClick={() => setSecret(null)} data-testid="secret-close">{t("common:close")}</Button>}>
        <Alert type="warning" showIcon message={t("secret.once")} style={{ marginBottom: 12 }} />
        <Typography.Paragraph copyable code data-testid="subscription-secret">{secret}</Typography.Paragraph>
      </Modal>
      {hitsOf && <Hits sub={hitsOf} onClose={() => setHitsOf(null)} />}
    </div>
  );
}
