// The tabular views of the drawer: nodes, tasks (with reassign / remind;
// cc tasks shown as cc'd), event dispatch and execution tokens with the
// open joins' arrived and awaited branches.
import { Button, Card, Space, Table, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { formatJson, formatTime } from "../format";
import { JsonBlock } from "../JsonBlock";
import { formatCount, formatDuration } from "../units";
import { StatusTag } from "../StatusTag";
import { RunTag } from "./RunTag";
import type { RepairRequest } from "./repairs";
import type { Diagnostics, NodeRun, OutboxRow, TaskRow, Token } from "../../api/diagnosticsDocument";

const HUMAN = new Set(["approval", "handle", "catch", "resubmit"]);

export function NodesView({ doc }: { doc: Diagnostics }) {
  const { t } = useTranslation("instance");
  return (
    <Table<NodeRun>
      data-testid="view-nodes"
      size="small"
      rowKey="key"
      pagination={false}
      dataSource={doc.nodes}
      columns={[
        { title: t("col.node"), render: (_: unknown, n: NodeRun) => n.name ?? n.key },
        { title: t("col.type"), dataIndex: "type" },
        { title: t("col.state"), dataIndex: "state", render: (v: string) => <RunTag status={v} /> },
        { title: t("col.visits"), dataIndex: "visits" },
        { title: t("col.firstEnteredAt"), dataIndex: "firstEnteredAt", render: formatTime },
        { title: t("col.lastEnteredAt"), dataIndex: "lastEnteredAt", render: formatTime },
        { title: t("col.tokens"), dataIndex: "tokenIds", render: (v: number[]) => v.join(", ") || "—" },
        { title: t("col.openTasks"), dataIndex: "openTaskIds", render: (v: number[]) => v.join(", ") || "—" },
        { title: t("col.error"), dataIndex: "error", render: (e: NodeRun["error"]) => (e ? `${e.code}: ${e.message}` : "—") },
      ]}
    />
  );
}

export function TasksTable({ tasks, onRepair }: { tasks: TaskRow[]; onRepair?: (r: RepairRequest) => void }) {
  const { t } = useTranslation("instance");
  return (
    <Table<TaskRow>
      size="small"
      rowKey="id"
      pagination={tasks.length > 20 ? { pageSize: 20 } : false}
      dataSource={tasks}
      scroll={{ x: "max-content" }}
      onRow={(r) => ({ "data-testid": `task-row-${r.id}` }) as object}
      columns={[
        { title: t("col.task"), dataIndex: "id" },
        { title: t("col.node"), dataIndex: "nodeKey" },
        { title: t("col.kind"), dataIndex: "kind" },
        {
          title: t("col.status"),
          render: (_: unknown, r: TaskRow) =>
            r.cc ? (
              <Tag color="cyan" data-testid="task-cc">
                {t("tasks.cc")}
              </Tag>
            ) : (
              <RunTag status={r.status} />
            ),
        },
        { title: t("col.assignee"), dataIndex: "assignee" },
        { title: t("col.createdAt"), dataIndex: "createdAt", render: formatTime },
        { title: t("col.dueAt"), dataIndex: "dueAt", render: formatTime },
        { title: t("col.duration"), dataIndex: "durationMs", render: (v: number | null) => formatDuration(v) },
        { title: t("col.comment"), dataIndex: "comment", render: (v: string | null) => v ?? "—", ellipsis: true },
        ...(onRepair
          ? [
              {
                title: "",
                render: (_: unknown, r: TaskRow) =>
                  r.status === "pending" && !r.cc && HUMAN.has(r.kind) ? (
                    <Space>
                      <Button size="small" onClick={() => onRepair({ action: "reassign", params: { taskId: r.id } })} data-testid={`task-reassign-${r.id}`}>
                        {t("repair.reassign")}
                      </Button>
                      <Button size="small" onClick={() => onRepair({ action: "remind", params: { taskId: r.id } })} data-testid={`task-remind-${r.id}`}>
                        {t("repair.remind")}
                      </Button>
                    </Space>
                  ) : null,
              },
            ]
          : []),
      ]}
    />
  );
}

export function TasksView({ doc, onRepair }: { doc: Diagnostics; onRepair: (r: RepairRequest) => void }) {
  return (
    <div data-testid="view-tasks">
      <TasksTable tasks={doc.tasks} onRepair={onRepair} />
    </div>
  );
}

export function EventsView({ doc }: { doc: Diagnostics }) {
  const { t } = useTranslation("instance");
  return (
    <div data-testid="view-events">
      <Table<OutboxRow>
        size="small"
        rowKey="id"
        pagination={doc.events.items.length > 20 ? { pageSize: 20 } : false}
        dataSource={doc.events.items}
        expandable={{
          expandedRowRender: (r) => (
            <Space direction="vertical" style={{ width: "100%" }}>
              <JsonBlock value={r.payload} />
              {r.hits.map((h) => (
                <Typography.Text key={h.id}>
                  {t("events.hit", { subscription: h.subscriptionId, status: h.status, response: h.responseStatus ?? "—" })} {h.lastError ?? ""}
                </Typography.Text>
              ))}
            </Space>
          ),
        }}
        columns={[
          { title: "#", dataIndex: "id" },
          { title: t("col.eventType"), dataIndex: "eventType" },
          { title: t("col.status"), dataIndex: "status", render: (v: string) => <RunTag status={v} /> },
          { title: t("col.createdAt"), dataIndex: "createdAt", render: formatTime },
          { title: t("col.dispatchedAt"), dataIndex: "dispatchedAt", render: formatTime },
          { title: t("col.dispatchJob"), render: (_: unknown, r: OutboxRow) => (r.dispatchJob ? <>#{r.dispatchJob.id} <StatusTag status={r.dispatchJob.status} /></> : "—") },
          { title: t("col.hits"), render: (_: unknown, r: OutboxRow) => r.hits.length },
          { title: t("col.error"), dataIndex: "error", render: (v: string | null) => formatJson(v), ellipsis: true },
        ]}
      />
      {doc.events.truncated && <Typography.Text type="warning">{t("events.truncated", { total: formatCount(doc.events.total) })}</Typography.Text>}
    </div>
  );
}

export function TokensTable({ tokens }: { tokens: Token[] }) {
  const { t } = useTranslation("instance");
  return (
    <Table<Token>
      size="small"
      rowKey="id"
      pagination={tokens.length > 20 ? { pageSize: 20 } : false}
      dataSource={tokens}
      columns={[
        { title: t("col.token"), dataIndex: "id" },
        { title: t("col.node"), dataIndex: "nodeKey" },
        { title: t("col.state"), dataIndex: "state", render: (v: string) => <RunTag status={v} /> },
        { title: t("col.forkStack"), dataIndex: "forkStack", render: (v: Token["forkStack"]) => v.map((f) => `${f.forkNode}#${f.frameId}/${f.expected}`).join(" › ") || "—" },
        { title: t("col.createdAt"), dataIndex: "createdAt", render: formatTime },
        { title: t("col.consumedAt"), dataIndex: "consumedAt", render: formatTime },
      ]}
    />
  );
}

export function TokensView({ doc }: { doc: Diagnostics }) {
  const { t } = useTranslation("instance");
  return (
    <div data-testid="view-tokens">
      <TokensTable tokens={doc.tokens.items} />
      {doc.tokens.joins.map((j) => (
        <Card key={j.frameId} size="small" style={{ marginTop: 12 }} data-testid={`open-join-${j.joinNode}`} title={t("tokens.join", { join: j.joinNode, fork: j.forkNode, expected: j.expected, gateway: j.gateway })}>
          <Typography.Paragraph>
            <Typography.Text strong>{t("tokens.arrived")}</Typography.Text> {j.arrived.map((a) => t("tokens.arrivedBranch", { branch: a.branch, token: a.tokenId, node: a.atNode })).join("; ") || "—"}
          </Typography.Paragraph>
          <Typography.Paragraph style={{ marginBottom: 0 }}>
            <Typography.Text strong>{t("tokens.awaited")}</Typography.Text> {j.awaited.map((a) => t("tokens.awaitedBranch", { branch: a.branch, nodes: a.atNodes.join(", ") || "—" })).join("; ") || "—"}
          </Typography.Paragraph>
        </Card>
      ))}
    </div>
  );
}
