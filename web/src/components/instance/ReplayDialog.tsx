// The repair of a failed webhook delivery of this instance's events (SPEC
// O-12, L-24): the replay the conclusion names (its params are the body of
// POST /engine/jobs/replay-dead: the delivery job type, this instance, dead
// and failed), its preview first (how many, which jobs), then the replay
// with a reason. Receivers dedupe on the event id, so a resend is safe.
import { useState } from "react";
import { App, Form, Modal, Table, Typography } from "antd";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { replayPreviewQuery } from "../../api/queries/jobs";
import { ErrorAlert } from "../errors";
import { StatusTag } from "../StatusTag";
import { ReasonInput, blank, confirmProps } from "./ReasonInput";

type Sample = Schemas["ReplaySample"];

export function ReplayDialog({ instanceId, filter, onClose, onDone }: { instanceId: number; filter: Record<string, unknown>; onClose: () => void; onDone: () => void }) {
  const { t } = useTranslation("instance");
  const { message } = App.useApp();
  const [reason, setReason] = useState("");
  // this instance's deliveries, whatever the params say
  const body = { ...filter, instanceId };
  const preview = useQuery(replayPreviewQuery(instanceId, body));
  const run = useMutation({
    mutationFn: () => unwrap(api.POST("/api/workflows/engine/jobs/replay-dead", { body: { ...body, reason } as never })),
    onSuccess: (result) => {
      void message.success(t("replay.done", { submitted: result.submitted, matched: result.matched, batch: result.replayBatchId }));
      onDone();
    },
  });
  const columns = [
    { title: t("replay.job"), dataIndex: "id" },
    { title: t("col.status"), dataIndex: "status", render: (status: string) => <StatusTag status={status} /> },
    { title: t("replay.error"), dataIndex: "lastError", ellipsis: true },
  ];
  return (
    <Modal
      open
      width={720}
      title={t("replay.title", { id: instanceId })}
      onCancel={onClose}
      onOk={() => run.mutate()}
      okText={t("replay.confirm")}
      okButtonProps={confirmProps(blank(reason) || !preview.data?.wouldSubmit, run.isPending)}
      data-testid="replay-dialog"
    >
      <ErrorAlert error={preview.error} />
      {preview.data && (
        <>
          <Typography.Paragraph data-testid="replay-count">{t("replay.matched", { matched: preview.data.matched, selected: preview.data.wouldSubmit })}</Typography.Paragraph>
          <Table<Sample> size="small" rowKey="id" pagination={false} dataSource={preview.data.samples} columns={columns} />
        </>
      )}
      <Form layout="vertical" style={{ marginTop: 12 }}>
        <ReasonInput value={reason} onChange={setReason} />
      </Form>
      <ErrorAlert error={run.error} />
    </Modal>
  );
}
