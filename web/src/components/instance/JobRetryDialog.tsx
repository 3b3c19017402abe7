// Retry one job with a reason (POST /engine/jobs/{id}/retry). An external
// call whose outcome is unconfirmed is said so first: confirm with the
// receiver before retrying.
import { useState } from "react";
import { Alert, App, Descriptions, Form, Modal } from "antd";
import { useMutation } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap } from "../../api/client";
import { ErrorAlert } from "../errors";
import { ReasonInput, blank, confirmProps } from "./ReasonInput";
import { RunTag } from "./RunTag";
import type { Job } from "../../api/diagnosticsDocument";

export function JobRetryDialog({ jobId, job, onClose, onDone }: { jobId: number; job?: Job; onClose: () => void; onDone: () => void }) {
  const { t } = useTranslation("instance");
  const { message } = App.useApp();
  const [reason, setReason] = useState("");
  const retry = useMutation({
    mutationFn: () => unwrap(api.POST("/api/workflows/engine/jobs/{jobId}/retry", { params: { path: { jobId } }, body: { reason } })),
    onSuccess: () => {
      void message.success(t("retry.done", { id: jobId }));
      onDone();
    },
  });
  return (
    <Modal
      open
      title={t("retry.title", { id: jobId })}
      onCancel={onClose}
      onOk={() => retry.mutate()}
      okText={t("retry.confirm")}
      okButtonProps={confirmProps(blank(reason), retry.isPending)}
      data-testid="job-retry-dialog"
    >
      {job && (
        <Descriptions size="small" column={1} bordered style={{ marginBottom: 12 }}>
          <Descriptions.Item label={t("col.type")}>{job.type}</Descriptions.Item>
          <Descriptions.Item label={t("col.status")}>
            <RunTag status={job.status} />
          </Descriptions.Item>
          <Descriptions.Item label={t("col.node")}>{job.nodeKey ?? "—"}</Descriptions.Item>
          <Descriptions.Item label={t("col.error")}>{job.lastError ?? "—"}</Descriptions.Item>
        </Descriptions>
      )}
      {job?.lastErrorCode === "external_outcome_unconfirmed" && <Alert type="warning" showIcon message={t("retry.unconfirmed")} style={{ marginBottom: 12 }} />}
      <Form layout="vertical">
        <ReasonInput value={reason} onChange={setReason} />
      </Form>
      <ErrorAlert error={retry.error} />
    </Modal>
  );
}
