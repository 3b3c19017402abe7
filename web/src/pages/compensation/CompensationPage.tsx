// 补偿工单 (Compensation tickets, SPEC C-8, C-9): list by status and
// instance, the detail with its history timeline and the action's ledger
// status, and the five operations, each confirmed; a button the state
// forbids is disabled with the reason.
import { useState } from "react";
import { App, Button, Card, Descriptions, Drawer, Form, Input, InputNumber, Select, Space, Timeline, Tooltip, Typography, Upload } from "antd";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, download, unwrap, type Schemas } from "../../api/client";
import { ErrorAlert, useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { InstanceLink } from "../../components/InstanceLink";
import { JsonBlock } from "../../components/JsonBlock";
import { StatusTag } from "../../components/StatusTag";
import { ActionLink } from "../../components/ActionLink";
import { formatBytes } from "../../components/units";
import { ticketKeys, ticketQuery, ticketsQuery } from "../../api/queries/compensation";
import { invalidate } from "../../api/queries/keys";
import { PagedList } from "../../components/PagedList";
import { useListState } from "../../components/useListState";

type Ticket = Schemas["CompensationPublic"];
const TICKET_FILTERS = { status: "one", instanceId: "one" } as const;
type Detail = Schemas["CompensationDetail"];
type Op = "resume" | "retry" | "resolve" | "terminate";

/** Why an operation is not allowed now (null: allowed). */
export function blocked(op: Op, d: Detail): string | null {
  if (d.status !== "pending") return "notPending";
  if (op === "resume") {
    if (d.instanceStatus === "suspended") return "instanceSuspended";
    if (d.instanceStatus !== "running") return "instanceNotRunning";
    if (!d.repairTaskId) return "noRepairTask";
    const task = d.repairTasks.find((tk) => tk.id === d.repairTaskId);
    if (!task || task.status !== "pending") return "repairTaskClosed";
  }
  if (op === "retry" && d.compensationActionStatus !== "failed") return "actionNotFailed";
  return null;
}

function TicketDetail({ id, onClose }: { id: number; onClose: () => void }) {
  const { t } = useTranslation("compensation");
  const { modal, message } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const [note, setNote] = useState("");
  const detail = useQuery(ticketQuery(id));
  const d = detail.data;
  const refresh = () => invalidate(client, ticketKeys.details(), ticketKeys.lists());

  function operate(op: Op) {
    let reason = "";
    modal.confirm({
      title: t(`op.${op}Title`, { id }),
      content: (
        <Space direction="vertical" style={{ width: "100%" }}>
          <Typography.Paragraph>{t(`op.${op}Explain`)}</Typography.Paragraph>
          <Input placeholder={t("op.reason")} onChange={(e) => (reason = e.target.value)} data-testid="op-reason" />
        </Space>
      ),
      okText: t(`op.${op}`),
      cancelText: t("common:cancel"),
      okButtonProps: { danger: op === "terminate", ...({ "data-testid": "confirm-ok" } as Record<string, string>) },
      onOk: async () => {
        try {
          const path = { ticketId: id };
          const body = { reason: reason || null };
          if (op === "resume") await unwrap(api.POST("/api/workflows/compensation/{ticketId}/resume", { params: { path }, body }));
          else if (op === "retry") await unwrap(api.POST("/api/workflows/compensation/{ticketId}/retry", { params: { path }, body }));
          else await unwrap(api.POST("/api/workflows/compensation/{ticketId}/resolve", { params: { path }, body: { action: op, reason: reason || null } }));
          message.success(t(`op.${op}Done`, { id }));
          await refresh();
        } catch (e) {
          showError(e);
        }
      },
    });
  }

  async function addNote() {
    try {
      await unwrap(api.POST("/api/workflows/compensation/{ticketId}/note", { params: { path: { ticketId: id } }, body: { message: note } }));
      setNote("");
      message.success(t("note.added"));
      await refresh();
    } catch (e) {
      showError(e);
    }
  }

  async function upload(file: File) {
    const form = new FormData();
    form.append("file", file);
    if (note) form.append("message", note);
    try {
      await unwrap(
        api.POST("/api/workflows/compensation/{ticketId}/note", {
          params: { path: { ticketId: id } },
          body: { file: file.name },
          bodySerializer: () => form,
        }),
      );
      setNote("");
      message.success(t("note.uploaded", { name: file.name }));
      await refresh();
    } catch (e) {
      showError(e);
    }
  }

  const opButton = (op: Op) => {
    const reason = d ? blocked(op, d) : "loading";
    return (
      <Tooltip key={op} title={reason ? t(`blocked.${reason}`) : undefined}>
        <Button data-testid={`ticket-${op}`} danger={op === "terminate"} disabled={reason !== null} onClick={() => operate(op)}>
          {t(`op.${op}`)}
        </Button>
      </Tooltip>
    );
  };

  return (
    <Drawer open onClose={onClose} width={860} title={t("detail.title", { id })} data-testid="ticket-drawer" extra={<Space>{(["resume", "retry", "resolve", "terminate"] as Op[]).map(opButton)}</Space>}>
      {detail.error ? <ErrorAlert error={detail.error} /> : null}
      {d && (
        <Space direction="vertical" style={{ width: "100%" }} size="large">
          <Descriptions size="small" column={2} bordered>
            <Descriptions.Item label={t("col.status")}><span data-testid="ticket-status"><StatusTag status={d.status} /></span></Descriptions.Item>
            <Descriptions.Item label={t("col.instance")}>
              <InstanceLink id={d.instanceId} /> <StatusTag status={d.instanceStatus} />
            </Descriptions.Item>
            <Descriptions.Item label={t("col.kind")}>{d.kind}</Descriptions.Item>
            <Descriptions.Item label={t("col.node")}>{`${d.nodeKey} ← ${d.failedNodeKey}`}</Descriptions.Item>
            <Descriptions.Item label={t("col.actionStatus")}>
              <StatusTag status={d.compensationActionStatus} />
              {d.actionJobId && (
                <Link to={`/monitor/jobs?job=${d.actionJobId}`} data-testid="ticket-action-job">
                  {t("detail.actionJob", { id: d.actionJobId })}
                </Link>
              )}
            </Descriptions.Item>
            <Descriptions.Item label={t("detail.ledger")}>
              {d.actionJob ? `${t(`common:status.${d.actionJob.status}`)} · ${d.actionJob.attempts}/${d.actionJob.maxAttempts} · ${d.actionJob.lastError ?? ""}` : "—"}
            </Descriptions.Item>
            <Descriptions.Item label={t("detail.repairTask")}>{d.repairTaskId ?? "—"}</Descriptions.Item>
            <Descriptions.Item label={t("col.createdAt")}>{formatTime(d.createdAt)}</Descriptions.Item>
            <Descriptions.Item label={t("detail.error")} span={2}>{d.error ?? "—"}</Descriptions.Item>
            <Descriptions.Item label={t("detail.resolved")} span={2}>{d.resolvedAt ? `${d.resolvedBy} · ${formatTime(d.resolvedAt)}` : "—"}</Descriptions.Item>
            <Descriptions.Item label={t("detail.action")} span={2}><JsonBlock value={d.actionPayload} /></Descriptions.Item>
          </Descriptions>
          <Card size="small" title={t("note.title")}>
            <Space direction="vertical" style={{ width: "100%" }}>
              <Input.TextArea rows={2} value={note} onChange={(e) => setNote(e.target.value)} placeholder={t("note.placeholder")} data-testid="note-text" />
              <Space>
                <Button type="primary" disabled={!note.trim()} onClick={addNote} data-testid="note-add">{t("note.add")}</Button>
                <Upload
                  showUploadList={false}
                  accept=".pdf,.png,.jpg,.jpeg,.txt,.csv,.json"
                  beforeUpload={(file) => {
                    void upload(file);
                    return false;
                  }}
                >
                  <Button data-testid="note-upload">{t("note.upload")}</Button>
                </Upload>
              </Space>
            </Space>
          </Card>
          <Card size="small" title={t("history.title")}>
            <Timeline
              data-testid="ticket-history"
              items={d.history.map((h) => ({
                key: h.id,
                children: (
                  <div data-testid="history-entry" data-kind={h.kind}>
                    <Space wrap>
                      <Typography.Text strong>{t(`history.${h.kind}`)}</Typography.Text>
                      <Typography.Text type="secondary">{`${h.actor} · ${formatTime(h.createdAt)}`}</Typography.Text>
                    </Space>
                    {h.message && <div>{h.message}</div>}
                    {h.attachment && (
                      <div>
                      <ActionLink
                        data-testid="attachment-download"
                        onClick={() => download(h.attachment!.url, h.attachment!.name).catch(showError)}
                      >
                        {t("history.download", { name: h.attachment.name, size: formatBytes(h.attachment.sizeBytes) })}
                      </ActionLink>
                      </div>
                    )}
                    {h.detail && Object.keys(h.detail).length > 0 && <JsonBlock value={h.detail} />}
                  </div>
                ),
              }))}
            />
          </Card>
        </Space>
      )}
    </Drawer>
  );
}

export default function CompensationPage() {
  const { t } = useTranslation("compensation");
  const list = useListState(TICKET_FILTERS);
  const { pager, set } = list;
  const status = list.values.status as Schemas["TicketStatus"] | undefined;
  const instanceId = Number(list.values.instanceId) || undefined;
  const applyInstance = (text: string) => {
    const typed = Number(text) || undefined;
    if (typed !== instanceId) set({ instanceId: typed });
  };
  const open = Number(list.params.get("ticket")) || null;
  const tickets = useQuery({
    ...ticketsQuery(status, instanceId, pager.cursor),
    placeholderData: keepPreviousData,
  });
  return (
    <div data-testid="page-compensation">
      <Card size="small" style={{ marginBottom: 16 }}>
        <Form layout="inline">
          <Form.Item label={t("col.status")}>
            <Select
              allowClear
              style={{ width: 160 }}
              value={status}
              data-testid="ticket-filter-status" aria-label={t("col.status")}
              onChange={(v: string | undefined) => set({ status: v })}
              options={["pending", "resolved", "terminated"].map((s) => ({ value: s, label: t(`common:status.${s}`) }))}
            />
          </Form.Item>
          <Form.Item label={t("col.instance")}>
            {/* applied on Enter or leaving the box (one history entry, not one per digit);
                keyed by the URL's value so Back and Reset show what the list is filtered by */}
            <InputNumber
              key={instanceId ?? ""}
              min={1}
              defaultValue={instanceId}
              onPressEnter={(e) => applyInstance((e.target as HTMLInputElement).value)}
              onBlur={(e) => applyInstance(e.target.value)}
              data-testid="ticket-filter-instance"
              aria-label={t("col.instance")}
            />
          </Form.Item>
        </Form>
      </Card>
      <PagedList<Ticket>
        testId="tickets-table"
        main
        query={tickets}
        pager={pager}
        columns={[
          { title: t("col.id"), dataIndex: "id", render: (id: number) => <ActionLink onClick={() => set({ ticket: id })} data-testid={`ticket-link-${id}`}>#{id}</ActionLink> },
          { title: t("col.status"), dataIndex: "status", render: (s: string) => <StatusTag status={s} /> },
          { title: t("col.instance"), dataIndex: "instanceId", render: (v: number) => <InstanceLink id={v} /> },
          { title: t("col.kind"), dataIndex: "kind" },
          { title: t("col.node"), render: (_, r) => `${r.nodeKey} ← ${r.failedNodeKey}` },
          { title: t("col.actionStatus"), dataIndex: "compensationActionStatus", render: (s: string) => <StatusTag status={s} /> },
          { title: t("detail.error"), dataIndex: "error", ellipsis: true, render: (e: string | null) => e ?? "—" },
          { title: t("col.createdAt"), dataIndex: "createdAt", width: 170, render: formatTime },
        ]}
      />
      {open && <TicketDetail id={open} onClose={() => set({ ticket: null })} />}
    </div>
  );
}
