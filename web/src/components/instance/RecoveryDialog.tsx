// A targeted recovery action limited to this instance (SPEC O-18): the
// preview (count and what each item gets), then the run with a reason.
import { useState } from "react";
import { App, Form, Modal, Table, Typography } from "antd";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { recoveryPreviewQuery } from "../../api/queries/instances";
import { ErrorAlert } from "../errors";
import { ReasonInput, blank, confirmProps } from "./ReasonInput";

type Item = Schemas["RecoveryItemPublic"];

export function RecoveryDialog({ instanceId, action, onClose, onDone }: { instanceId: number; action: string; onClose: () => void; onDone: () => void }) {
  const { t } = useTranslation("instance");
  const { message } = App.useApp();
  const [reason, setReason] = useState("");
  const preview = useQuery(recoveryPreviewQuery(action, instanceId));
  const run = useMutation({
    mutationFn: () => unwrap(api.POST("/api/workflows/engine/recovery/{action}/run", { params: { path: { action } }, body: { instanceId, reason } as never })),
    onSuccess: (result) => {
      void message.success(t("recovery.done", { done: result.totals.done, total: result.totals.total }));
      onDone();
    },
  });
  const columns = [
    { title: t("recovery.what"), dataIndex: "action" },
    { title: t("col.type"), render: (_: unknown, r: Item) => r.jobType ?? r.target },
    { title: t("col.node"), dataIndex: "nodeKey" },
    { title: t("recovery.why"), dataIndex: "reason" },
  ];
  return (
    <Modal
      open
      width={760}
      title={t("recovery.title", { action })}
      onCancel={onClose}
      onOk={() => run.mutate()}
      okText={t("recovery.confirm")}
      okButtonProps={confirmProps(blank(reason) || !preview.data?.count, run.isPending)}
      data-testid="recovery-dialog"
    >
      <ErrorAlert error={preview.error} />
      {preview.data && (
        <>
          <Typography.Paragraph data-testid="recovery-count">{t("recovery.count", { count: preview.data.count })}</Typography.Paragraph>
          <Table<Item> size="small" rowKey={(r, i) => `${r.jobId ?? r.taskId ?? r.outboxId}-${i}`} pagination={false} dataSource={preview.data.samples} columns={columns} />
        </>
      )}
      <Form layout="vertical" style={{ marginTop: 12 }}>
        <ReasonInput value={reason} onChange={setReason} />
      </Form>
      <ErrorAlert error={run.error} />
    </Modal>
  );
}
