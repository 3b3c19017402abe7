// Saved views of the instance list (/views, scope "instances"): pick one,
// save the current filter as a new one, rename, share with the tenant, make
// it my default (applied when the tab opens without filters), delete.
// Only the owner changes a view; a colleague's shared view can be picked.
import { useState } from "react";
import { App, Button, Checkbox, Form, Input, Modal, Popconfirm, Select, Space, Tooltip } from "antd";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { useShowError } from "../../components/errors";
import type { InstanceQuery } from "./filters";
import { type View } from "./views";
import { viewKeys } from "../../api/queries/views";

interface Props {
  me: string | undefined;
  views: View[];
  current: View | undefined;
  query: InstanceQuery;
  onPick: (view: View | undefined) => void;
}

export function SavedViews({ me, views, current, query, onPick }: Props) {
  const { t } = useTranslation("instances");
  const { message } = App.useApp();
  const showError = useShowError();
  const queryClient = useQueryClient();
  const [dialog, setDialog] = useState<"create" | "rename" | null>(null);
  const [form] = Form.useForm<{ name: string; shared: boolean; isDefault: boolean }>();
  const mine = current !== undefined && current.owner === me;

  const done = async (text: string) => {
    await queryClient.invalidateQueries({ queryKey: viewKeys.list("instances") });
    message.success(text);
  };
  const create = useMutation({
    mutationFn: (v: { name: string; shared: boolean; isDefault: boolean }) =>
      unwrap(api.POST("/api/workflows/views", { body: { scope: "instances", filters: { ...query }, ...v } })),
    onSuccess: async (view) => {
      setDialog(null);
      await done(t("views.saved", { name: view.name }));
      onPick(view);
    },
    onError: showError,
  });
  const update = useMutation({
    mutationFn: (body: Schemas["ViewUpdate"]) =>
      unwrap(api.PATCH("/api/workflows/views/{viewId}", { params: { path: { viewId: current!.id } }, body })),
    onSuccess: async (view) => {
      setDialog(null);
      await done(t("views.updated", { name: view.name }));
    },
    onError: showError,
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE("/api/workflows/views/{viewId}", { params: { path: { viewId: current!.id } } })),
    onSuccess: async () => {
      const name = current!.name;
      onPick(undefined);
      await done(t("views.deleted", { name }));
    },
    onError: showError,
  });

  const label = (v: View) =>
    [v.name, v.isDefault && v.owner === me ? t("views.defaultMark") : "", v.shared ? t("views.sharedMark") : "", v.owner !== me ? `(${v.owner})` : ""]
      .filter(Boolean)
      .join(" ");
  const open = (kind: "create" | "rename") => {
    form.setFieldsValue(kind === "create" ? { name: "", shared: false, isDefault: false } : { name: current!.name });
    setDialog(kind);
  };
  const notMine = mine ? undefined : t("views.ownerOnly");

  return (
    <Space wrap>
      <Select
        data-testid="view-select" aria-label={t("views.pick")}
        style={{ minWidth: 220 }}
        placeholder={t("views.pick")}
        allowClear
        value={current?.id}
        onChange={(id?: number) => onPick(views.find((v) => v.id === id))}
        options={views.map((v) => ({ value: v.id, label: label(v) }))}
      />
      <Button onClick={() => open("create")} data-testid="view-save-as">
        {t("views.saveAs")}
      </Button>
      {current && (
        <>
          <Tooltip title={notMine}>
            <Button disabled={!mine} onClick={() => update.mutate({ filters: { ...query } })} data-testid="view-update">
              {t("views.update")}
            </Button>
          </Tooltip>
          <Tooltip title={notMine}>
            <Button disabled={!mine} onClick={() => open("rename")} data-testid="view-rename">
              {t("views.rename")}
            </Button>
          </Tooltip>
          <Tooltip title={notMine}>
            <Button disabled={!mine} onClick={() => update.mutate({ shared: !current.shared })} data-testid="view-share">
              {current.shared ? t("views.unshare") : t("views.share")}
            </Button>
          </Tooltip>
          <Tooltip title={notMine}>
            <Button disabled={!mine} onClick={() => update.mutate({ isDefault: !current.isDefault })} data-testid="view-default">
              {current.isDefault ? t("views.unsetDefault") : t("views.setDefault")}
            </Button>
          </Tooltip>
          <Popconfirm
            title={t("views.deleteConfirm", { name: current.name })}
            onConfirm={() => remove.mutate()}
            okButtonProps={{ "data-testid": "view-delete-ok" }}
            disabled={!mine}
          >
            <Button danger disabled={!mine} data-testid="view-delete">
              {t("common:delete")}
            </Button>
          </Popconfirm>
        </>
      )}
      <Modal
        open={dialog !== null}
        title={dialog === "create" ? t("views.saveAsTitle") : t("views.renameTitle")}
        onCancel={() => setDialog(null)}
        onOk={() => form.submit()}
        okButtonProps={{ "data-testid": "view-dialog-ok", loading: create.isPending || update.isPending }}
        destroyOnClose
      >
        <Form
          form={form}
          layout="vertical"
          onFinish={(v) => (dialog === "create" ? create.mutate(v) : update.mutate({ name: v.name }))}
        >
          <Form.Item name="name" label={t("views.name")} rules={[{ required: true, whitespace: true, message: t("views.nameRequired") }]}>
            <Input data-testid="view-name" maxLength={100} />
          </Form.Item>
          {dialog === "create" && (
            <>
              <Form.Item name="shared" valuePropName="checked">
                <Checkbox data-testid="view-shared">{t("views.sharedLabel")}</Checkbox>
              </Form.Item>
              <Form.Item name="isDefault" valuePropName="checked">
                <Checkbox data-testid="view-is-default">{t("views.defaultLabel")}</Checkbox>
              </Form.Item>
            </>
          )}
        </Form>
      </Modal>
    </Space>
  );
}
