// Saved views of the health inspection (scope "health", SPEC O-1): pick one to
// apply its pinned threshold and filters, save the current ones under a name,
// delete the picked one (only its owner may; the API says 403 otherwise).
import { useState } from "react";
import { App, Button, Form, Input, Modal, Popconfirm, Select, Space } from "antd";
import type { ButtonProps } from "antd";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap } from "../../api/client";
import { useShowError } from "../../components/errors";
import { queryOfView, thresholdLabel, viewFilters, type HealthQuery } from "./query";
import { viewKeys, viewsQuery } from "../../api/queries/views";


export function HealthViews({ query, viewId, onPick }: { query: HealthQuery; viewId: number | null; onPick: (id: number | null, q?: HealthQuery) => void }) {
  const { t } = useTranslation("health");
  const { message } = App.useApp();
  const showError = useShowError();
  const client = useQueryClient();
  const [saving, setSaving] = useState(false);
  const [form] = Form.useForm<{ name: string }>();
  const views = useQuery(viewsQuery("health"));
  const items = views.data?.items ?? [];

  const save = useMutation({
    mutationFn: (name: string) => unwrap(api.POST("/api/workflows/views", { body: { name, scope: "health", filters: viewFilters(query), shared: false, isDefault: false } })),
    onSuccess: async (view) => {
      await client.invalidateQueries({ queryKey: viewKeys.list("health") });
      setSaving(false);
      form.resetFields();
      message.success(t("views.saved", { name: view.name }));
      onPick(view.id);
    },
    onError: showError,
  });
  const remove = useMutation({
    mutationFn: (id: number) => unwrap(api.DELETE("/api/workflows/views/{viewId}", { params: { path: { viewId: id } } })),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: viewKeys.list("health") });
      onPick(null);
    },
    onError: showError,
  });

  return (
    <Space wrap>
      <Select
        allowClear
        style={{ minWidth: 220 }}
        placeholder={t("views.pick")}
        data-testid="health-view-select" aria-label={t("views.pick")}
        loading={views.isLoading}
        value={items.some((v) => v.id === viewId) ? viewId : undefined}
        options={items.map((v) => ({ value: v.id, label: v.shared ? `${v.name} (${t("views.shared")})` : v.name }))}
        onChange={(id: number | undefined) => {
          const view = items.find((v) => v.id === id);
          onPick(view ? view.id : null, view ? queryOfView(view.filters) : undefined);
        }}
      />
      <Button onClick={() => setSaving(true)} data-testid="health-view-save">{t("views.saveAs")}</Button>
      <Popconfirm
        title={t("views.confirmDelete")}
        disabled={viewId === null}
        okButtonProps={{ "data-testid": "health-view-delete-ok" } as ButtonProps}
        onConfirm={() => viewId !== null && remove.mutate(viewId)}
      >
        <Button danger disabled={viewId === null} loading={remove.isPending} data-testid="health-view-delete">{t("common:delete")}</Button>
      </Popconfirm>
      <Modal
        open={saving}
        title={t("views.saveAs")}
        okText={t("common:save")}
        cancelText={t("common:cancel")}
        confirmLoading={save.isPending}
        okButtonProps={{ "data-testid": "health-view-save-ok" } as ButtonProps}
        onOk={() => form.submit()}
        onCancel={() => setSaving(false)}
        destroyOnClose
      >
        <Form form={form} layout="vertical" onFinish={(v) => save.mutate(v.name.trim())}>
          <Form.Item name="name" label={t("views.name")} rules={[{ required: true, whitespace: true, message: t("views.nameRequired") }]}>
            <Input maxLength={255} data-testid="health-view-name" />
          </Form.Item>
          <div>{t("views.pins", { threshold: thresholdLabel(t, query.thresholdMinutes), rule: query.rule ? t(`rule.${query.rule}`) : t("filter.allRules"), level: query.level ? t(`level.${query.level}`) : t("filter.allLevels") })}</div>
        </Form>
      </Modal>
    </Space>
  );
}
