// Reassign (转办) and remind (催办) one task with a reason. A reassignment to
// someone who already holds a task at that node (409 assignee_conflict) and
// a remind within ten minutes (429) are said in words.
import { useState } from "react";
import { Alert, App, Form, Input, Modal } from "antd";
import { useMutation } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { ApiError, api, unwrap } from "../../api/client";
import { ErrorAlert } from "../errors";
import { ReasonInput, blank, confirmProps } from "./ReasonInput";
import { formatDuration } from "../units";

function Refusal({ error }: { error: unknown }) {
  const { t } = useTranslation("instance");
  if (error instanceof ApiError && error.code === "assignee_conflict") {
    return <Alert type="error" showIcon data-testid="reassign-conflict" message={t("reassign.conflict", { taskId: String(error.body.taskId ?? "") })} description={error.message} />;
  }
  if (error instanceof ApiError && error.code === "remind_too_soon") {
    return <Alert type="warning" showIcon data-testid="remind-too-soon" message={t("remind.tooSoon", { wait: formatDuration(Number(error.body.retryAfterSeconds ?? 0) * 1000) })} />;
  }
  return <ErrorAlert error={error} />;
}

export function ReassignDialog({ taskId, assignee, onClose, onDone }: { taskId: number; assignee?: string; onClose: () => void; onDone: () => void }) {
  const { t } = useTranslation("instance");
  const { message } = App.useApp();
  const [to, setTo] = useState("");
  const [reason, setReason] = useState("");
  const reassign = useMutation({
    mutationFn: () => unwrap(api.POST("/api/workflows/tasks/{taskId}/reassign", { params: { path: { taskId } }, body: { to: to.trim(), reason } })),
    onSuccess: () => {
      void message.success(t("reassign.done", { id: taskId, to: to.trim() }));
      onDone();
    },
  });
  return (
    <Modal
      open
      title={t("reassign.title", { id: taskId, assignee: assignee ?? "" })}
      onCancel={onClose}
      onOk={() => reassign.mutate()}
      okText={t("reassign.confirm")}
      okButtonProps={confirmProps(blank(reason) || blank(to), reassign.isPending)}
      data-testid="reassign-dialog"
    >
      <Form layout="vertical">
        <Form.Item label={t("reassign.to")} required>
          <Input value={to} onChange={(e) => setTo(e.target.value)} data-testid="reassign-to" />
        </Form.Item>
        <ReasonInput value={reason} onChange={setReason} />
      </Form>
      <Refusal error={reassign.error} />
    </Modal>
  );
}

export function RemindDialog({ taskId, assignee, onClose, onDone }: { taskId: number; assignee?: string; onClose: () => void; onDone: () => void }) {
  const { t } = useTranslation("instance");
  const { message } = App.useApp();
  const [note, setNote] = useState("");
  const remind = useMutation({
    mutationFn: () => unwrap(api.POST("/api/workflows/tasks/{taskId}/remind", { params: { path: { taskId } }, body: { note } })),
    onSuccess: (r) => {
      void message.success(t("remind.done", { assignee: r.assignee }));
      onDone();
    },
  });
  return (
    <Modal
      open
      title={t("remind.title", { id: taskId, assignee: assignee ?? "" })}
      onCancel={onClose}
      onOk={() => remind.mutate()}
      okText={t("remind.confirm")}
      okButtonProps={confirmProps(blank(note), remind.isPending)}
      data-testid="remind-dialog"
    >
      <Form layout="vertical">
        <ReasonInput value={note} onChange={setNote} label={t("remind.note")} />
      </Form>
      <Refusal error={remind.error} />
    </Modal>
  );
}
