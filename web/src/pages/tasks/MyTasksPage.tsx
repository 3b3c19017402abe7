// 我的待办 (My tasks): the signed-in user's tasks; a task opens with its
// instance's form (generated from the definition version) and the approve /
// reject / handle / transfer / comment actions.
import { useState } from "react";
import { App, Button, Card, Descriptions, Drawer, Form, Input, Modal, Select, Space, Timeline, Tooltip } from "antd";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { ErrorAlert, useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { InstanceLink } from "../../components/InstanceLink";
import { GeneratedForm, formFields, fromFormData, toFormData } from "../../components/GeneratedForm";
import { StatusTag } from "../../components/StatusTag";
import { ActionLink } from "../../components/ActionLink";
import { DeadlineBadges, taskStates } from "../../components/DeadlineBadges";
import { definitionVersionQuery } from "../../api/queries/definitions";
import { instanceKeys, instanceQuery } from "../../api/queries/instances";
import { invalidate } from "../../api/queries/keys";
import { myTasksQuery, taskKeys, taskQuery } from "../../api/queries/tasks";
import { PagedList } from "../../components/PagedList";
import { useListState } from "../../components/useListState";
import { validated } from "../../components/validated";

type Task = Schemas["TaskPublic"];
const TASK_FILTERS = { status: "one" } as const;
type Act = "approve" | "reject" | "handle" | "transfer" | "comment";

function allowed(act: Act, task: Task): string | null {
  if (act === "comment") return null;
  if (task.status !== "pending") return "notPending";
  if ((act === "approve" || act === "reject") && task.kind !== "approval") return "notApproval";
  if (act === "handle" && ["approval", "cc", "delay", "subprocess", "external_approval"].includes(task.kind)) return "notHandle";
  return null;
}

function TaskDrawer({ taskId, onClose }: { taskId: number; onClose: () => void }) {
  const { t } = useTranslation("tasks");
  const { message } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const [form] = Form.useForm();
  const [act, setAct] = useState<Act | null>(null);
  const [actForm] = Form.useForm<{ comment?: string; to?: string }>();
  const task = useQuery(taskQuery(taskId));
  const instance = useQuery({ ...instanceQuery(task.data?.instanceId ?? 0), enabled: !!task.data });
  const inst = instance.data;
  const version = useQuery({
    ...definitionVersionQuery(inst?.definitionKey ?? "", inst?.definitionVersion, inst?.tenant),
    enabled: !!inst,
  });
  const fields = formFields(version.data?.source);
  const [loadedFor, setLoadedFor] = useState<number | null>(null);
  if (inst && version.data && loadedFor !== inst.id) {
    form.setFieldsValue(fromFormData(fields, inst.form as Record<string, unknown>));
    setLoadedFor(inst.id);
  }

  async function submit() {
    const t0 = task.data!;
    const v = await validated(actForm);
    if (!v) return;
    const withForm = (act === "approve" || act === "handle") && fields.length > 0;
    const formValues = withForm ? await validated(form) : null;
    if (withForm && !formValues) return;
    const path = { taskId: t0.id };
    try {
      if (act === "approve" || act === "handle") {
        const formData = formValues ? toFormData(fields, formValues) : undefined;
        const body = { comment: v.comment || null, form: formData };
        if (act === "approve") await unwrap(api.POST("/api/workflows/tasks/{taskId}/approve", { params: { path }, body }));
        else await unwrap(api.POST("/api/workflows/tasks/{taskId}/handle", { params: { path }, body }));
      } else if (act === "reject") await unwrap(api.POST("/api/workflows/tasks/{taskId}/reject", { params: { path }, body: { comment: v.comment || null } }));
      else if (act === "transfer") await unwrap(api.POST("/api/workflows/tasks/{taskId}/transfer", { params: { path }, body: { to: v.to!, comment: v.comment || null } }));
      else await unwrap(api.POST("/api/workflows/tasks/{taskId}/comment", { params: { path }, body: { body: v.comment ?? "" } }));
      message.success(t(`act.${act}Done`, { id: t0.id }));
      setAct(null);
      actForm.resetFields();
      await invalidate(client, taskKeys.lists(), taskKeys.details(), instanceKeys.details());
    } catch (e) {
      showError(e);
    }
  }

  const tk = task.data;
  return (
    <Drawer open onClose={onClose} width={760} title={t("drawer.title", { id: taskId })} data-testid="task-drawer"
      extra={tk && (
        <Space>
          {(["approve", "reject", "handle", "transfer", "comment"] as Act[]).map((a) => {
            const reason = allowed(a, tk);
            return (
              <Tooltip key={a} title={reason ? t(`blocked.${reason}`) : undefined}>
                <Button type={a === "approve" || a === "handle" ? "primary" : "default"} danger={a === "reject"} disabled={!!reason} onClick={() => setAct(a)} data-testid={`task-${a}`}>
                  {t(`act.${a}`)}
                </Button>
              </Tooltip>
            );
          })}
        </Space>
      )}>
      {task.error ? <ErrorAlert error={task.error} /> : null}
      {instance.error ? <ErrorAlert error={instance.error} /> : null}
      {tk && (
        <Space direction="vertical" style={{ width: "100%" }} size="large">
          <Descriptions size="small" column={2} bordered>
            <Descriptions.Item label={t("col.node")}>{tk.nodeKey}</Descriptions.Item>
            <Descriptions.Item label={t("col.kind")}>{t(`kind.${tk.kind}`)}</Descriptions.Item>
            <Descriptions.Item label={t("col.status")}><span data-testid="task-status"><StatusTag status={tk.status} /></span></Descriptions.Item>
            <Descriptions.Item label={t("col.instance")}><InstanceLink id={tk.instanceId}>{inst ? `#${inst.id} ${inst.definitionKey} v${inst.definitionVersion}` : undefined}</InstanceLink> <StatusTag status={inst?.status} /></Descriptions.Item>
            <Descriptions.Item label={t("col.initiator")}>{tk.initiator ?? "—"}</Descriptions.Item>
            <Descriptions.Item label={t("col.dueAt")}>{formatTime(tk.dueAt)} <DeadlineBadges states={taskStates(tk)} escalatedAt={tk.escalatedAt} /></Descriptions.Item>
          </Descriptions>
          <Card size="small" title={t("drawer.form")}>
            {fields.length ? <GeneratedForm fields={fields} form={form} disabled={tk.status !== "pending"} /> : t("drawer.noForm")}
          </Card>
          {inst && inst.comments.length > 0 && (
            <Card size="small" title={t("drawer.comments")}>
              <Timeline items={inst.comments.map((c) => ({ key: c.id, children: `${c.author} · ${formatTime(c.createdAt)}: ${c.body}` }))} />
            </Card>
          )}
        </Space>
      )}
      <Modal open={act !== null} title={act ? t(`act.${act}Title`, { id: taskId }) : ""} onCancel={() => setAct(null)} onOk={submit} okText={act ? t(`act.${act}`) : ""} cancelText={t("common:cancel")} okButtonProps={{ "data-testid": "act-ok" } as Record<string, string>} forceRender>
        <p>{act ? t(`act.${act}Explain`) : ""}</p>
        <Form form={actForm} layout="vertical">
          {act === "transfer" && (
            <Form.Item name="to" label={t("act.to")} rules={[{ required: true, message: t("act.toRequired") }]}>
              <Input data-testid="act-to" />
            </Form.Item>
          )}
          <Form.Item name="comment" label={t("act.comment")} rules={act === "comment" ? [{ required: true, message: t("act.commentRequired") }] : []}>
            <Input.TextArea rows={3} data-testid="act-comment" />
          </Form.Item>
        </Form>
      </Modal>
    </Drawer>
  );
}

export default function MyTasksPage() {
  const { t } = useTranslation("tasks");
  const list = useListState(TASK_FILTERS);
  const { pager, set } = list;
  const status = (list.values.status ?? "pending") as Schemas["TaskStatus"] | "all";
  const open = Number(list.params.get("task")) || null;
  const tasks = useQuery({
    ...myTasksQuery(status, pager.cursor),
    placeholderData: keepPreviousData,
  });
  return (
    <div data-testid="page-tasks">
      <Space style={{ marginBottom: 12 }}>
        {t("col.status")}
        <Select
          style={{ width: 160 }}
          value={status}
          onChange={(v: string) => set({ status: v })}
          data-testid="task-filter-status" aria-label={t("col.status")}
          options={[{ value: "all", label: t("all") }, ...["pending", "waiting", "completed", "canceled", "cc"].map((s) => ({ value: s, label: t(`common:status.${s}`) }))]}
        />
      </Space>
      <PagedList<Task>
        testId="tasks-table"
        main
        query={tasks}
        pager={pager}
        columns={[
          { title: t("col.id"), dataIndex: "id", render: (id: number) => <ActionLink onClick={() => set({ task: id })} data-testid={`task-link-${id}`}>#{id}</ActionLink> },
          { title: t("col.definition"), dataIndex: "definitionKey", render: (v: string | null) => v ?? "—" },
          { title: t("col.node"), dataIndex: "nodeKey" },
          { title: t("col.kind"), dataIndex: "kind", render: (k: string) => t(`kind.${k}`) },
          { title: t("col.instance"), dataIndex: "instanceId", render: (v: number) => <InstanceLink id={v} /> },
          { title: t("col.initiator"), dataIndex: "initiator", render: (v: string | null) => v ?? "—" },
          { title: t("col.status"), dataIndex: "status", render: (s: string) => <StatusTag status={s} /> },
          { title: t("col.createdAt"), dataIndex: "createdAt", width: 170, render: formatTime },
          { title: t("col.dueAt"), dataIndex: "dueAt", width: 170, render: formatTime },
          { title: t("col.deadline"), key: "deadline", width: 150, render: (_, task) => (taskStates(task).length ? <DeadlineBadges states={taskStates(task)} escalatedAt={task.escalatedAt} /> : "—") },
        ]}
      />
      {open && <TaskDrawer taskId={open} onClose={() => set({ task: null })} />}
    </div>
  );
}
