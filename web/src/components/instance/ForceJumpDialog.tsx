// Force jump (SPEC O-4): the target picked on the run diagram or from the
// list, optionally only the tokens at one node; the API's preview shown as
// the diff (tasks terminated, tokens consumed, jobs canceled, what the target
// creates); a reason is required; then the jump and a reload of the drawer.
import { useState } from "react";
import { App, Col, Form, Modal, Row, Select, Table, Typography } from "antd";
import type { ColumnsType } from "antd/es/table";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { forceJumpPreviewQuery } from "../../api/queries/instances";
import { ErrorAlert } from "../errors";
import { ReasonInput, blank, confirmProps } from "./ReasonInput";
import { RunDiagram } from "./RunDiagram";
import { RunTag } from "./RunTag";
import type { Diagnostics } from "../../api/diagnosticsDocument";

type Jump = Schemas["ForceJumpPublic"];

function Diff({ jump }: { jump: Jump }) {
  const { t } = useTranslation("instance");
  const part = (key: string, title: string, rows: object[], columns: ColumnsType<object>) => (
    <div data-testid={`jump-${key}`} style={{ marginBottom: 8 }}>
      <Typography.Text strong>{t(title, { count: rows.length })}</Typography.Text>
      {rows.length > 0 && <Table size="small" pagination={false} rowKey={(_, i) => String(i)} dataSource={rows} columns={columns} />}
    </div>
  );
  const status = (v: string) => <RunTag status={v} />;
  return (
    <div data-testid="jump-diff">
      {part("terminated", "jump.terminated", jump.terminatedTasks, [
        { title: t("col.task"), dataIndex: "taskId" },
        { title: t("col.node"), dataIndex: "nodeKey" },
        { title: t("col.assignee"), dataIndex: "assignee" },
        { title: t("col.status"), dataIndex: "status", render: status },
      ])}
      {part("consumed", "jump.consumed", jump.consumedTokens, [
        { title: t("col.token"), dataIndex: "tokenId" },
        { title: t("col.node"), dataIndex: "nodeKey" },
        { title: t("col.status"), dataIndex: "state", render: status },
      ])}
      {part("canceled", "jump.canceled", jump.canceledJobs, [
        { title: t("col.job"), dataIndex: "jobId" },
        { title: t("col.type"), dataIndex: "type" },
        { title: t("col.node"), dataIndex: "nodeKey" },
        { title: t("col.status"), dataIndex: "status", render: status },
      ])}
      {part("created", "jump.created", [...jump.createdTasks.map((x) => ({ ...x, what: x.kind })), ...jump.createdJobs.map((x) => ({ ...x, what: x.type, assignee: null }))], [
        { title: t("col.type"), dataIndex: "what" },
        { title: t("col.node"), dataIndex: "nodeKey" },
        { title: t("col.assignee"), dataIndex: "assignee" },
      ])}
      <Typography.Text type="secondary">{t("jump.instanceStatus", { status: t(`status.${jump.instanceStatus}`, { ns: "common", defaultValue: jump.instanceStatus }) })}</Typography.Text>
    </div>
  );
}

export function ForceJumpDialog({ doc, target: initialTarget, fromNode: initialFrom, onClose, onDone }: { doc: Diagnostics; target?: string; fromNode?: string; onClose: () => void; onDone: () => void }) {
  const { t } = useTranslation("instance");
  const { message } = App.useApp();
  const id = doc.instance.id;
  const [target, setTarget] = useState<string | undefined>(initialTarget);
  const [fromNode, setFromNode] = useState<string | undefined>(initialFrom);
  const [reason, setReason] = useState("");
  const preview = useQuery({
    ...forceJumpPreviewQuery(id, target, fromNode),
    enabled: !!target,
    retry: false,
  });
  const jump = useMutation({
    mutationFn: () => unwrap(api.POST("/api/workflows/instances/{instanceId}/force-jump", { params: { path: { instanceId: id } }, body: { target: target!, reason, fromNode: fromNode ?? null } })),
    onSuccess: () => {
      void message.success(t("jump.done", { target }));
      onDone();
    },
  });
  const liveNodes = [...new Set(doc.tokens.items.filter((tk) => tk.state !== "consumed").map((tk) => tk.nodeKey))];
  return (
    <Modal
      open
      width={1200}
      title={t("jump.title", { id })}
      onCancel={onClose}
      onOk={() => jump.mutate()}
      okText={t("jump.confirm")}
      okButtonProps={confirmProps(!target || blank(reason) || !preview.data, jump.isPending)}
      data-testid="force-jump-dialog"
    >
      <Row gutter={16}>
        <Col span={14}>
          <Typography.Paragraph type="secondary">{t("jump.pickHint")}</Typography.Paragraph>
          <RunDiagram doc={doc} onPick={setTarget} selected={target} height={420} />
        </Col>
        <Col span={10}>
          <Form layout="vertical">
            <Form.Item label={t("jump.target")} required>
              <Select
                data-testid="jump-target"
                aria-label={t("jump.target")}
                value={target}
                onChange={setTarget}
                showSearch
                options={doc.nodes.map((n) => ({ value: n.key, label: n.name ? `${n.name} (${n.key})` : `${n.key} (${n.type})` }))}
              />
            </Form.Item>
            <Form.Item label={t("jump.fromNode")} extra={t("jump.fromNodeHint")}>
              <Select data-testid="jump-from" aria-label={t("jump.fromNode")} value={fromNode} onChange={setFromNode} allowClear options={liveNodes.map((k) => ({ value: k, label: k }))} />
            </Form.Item>
            <ReasonInput value={reason} onChange={setReason} />
          </Form>
          <ErrorAlert error={preview.error} />
          {preview.data && <Diff jump={preview.data} />}
          <ErrorAlert error={jump.error} />
        </Col>
      </Row>
    </Modal>
  );
}
