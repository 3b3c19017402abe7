// O-14 rankings, each a table: top definitions by volume (running /
// approved / rejected split, average duration), node bottlenecks (handling
// time and backlog of human nodes) and approver workload.
import { Table, Typography } from "antd";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { formatCount, formatDuration } from "../../components/units";
import { PanelCard } from "./PanelCard";
import { approx } from "./approx";
import { usePanel } from "./useAnalytics";
import { ActionLink } from "../../components/ActionLink";

type Props = { definitionKey?: string };

function PeriodNote({ days }: { days: number | undefined }) {
  const { t } = useTranslation("analytics");
  return days ? <Typography.Text type="secondary">{t("periodDays", { days })}</Typography.Text> : null;
}

export function TopDefinitionsPanel({ definitionKey, onPick }: Props & { onPick: (key: string) => void }) {
  const { t } = useTranslation("analytics");
  const q = usePanel("topDefinitions", definitionKey);
  const rough = q.data?.estimated;
  return (
    <PanelCard title={t("top.title")} testId="panel-top-definitions" loading={q.isLoading} error={q.error} extra={<PeriodNote days={q.data?.periodDays} />}>
      <Table<Schemas["TopDefinition"]>
        size="small"
        rowKey="definitionKey"
        pagination={false}
        dataSource={q.data?.items ?? []}
        columns={[
          {
            title: t("definition"),
            dataIndex: "definitionKey",
            render: (key: string) => (
              <ActionLink onClick={() => onPick(key)} data-testid={`top-pick-${key}`}>
                {key}
              </ActionLink>
            ),
          },
          { title: t("top.total"), dataIndex: "total", align: "right", render: (n: number) => approx(rough, "total", formatCount(n)) },
          { title: t("common:status.running"), dataIndex: "running", align: "right", render: (n: number) => approx(rough, "running", formatCount(n)) },
          { title: t("common:status.approved"), dataIndex: "approved", align: "right", render: (n: number) => approx(rough, "approved", formatCount(n)) },
          { title: t("common:status.rejected"), dataIndex: "rejected", align: "right", render: (n: number) => approx(rough, "rejected", formatCount(n)) },
          { title: t("avgDuration"), dataIndex: "avgDurationMs", align: "right", render: (ms: number | null) => approx(rough, "avgDurationMs", formatDuration(ms)) },
        ]}
      />
    </PanelCard>
  );
}

export function NodeBottlenecksPanel({ definitionKey }: Props) {
  const { t } = useTranslation("analytics");
  const q = usePanel("nodeBottlenecks", definitionKey);
  const rough = q.data?.estimated;
  return (
    <PanelCard title={t("nodes.title")} testId="panel-node-bottlenecks" loading={q.isLoading} error={q.error} extra={<PeriodNote days={q.data?.periodDays} />}>
      <Table<Schemas["NodeBottleneck"]>
        size="small"
        rowKey={(r) => `${r.definitionKey}/${r.nodeKey}`}
        pagination={{ pageSize: 8, hideOnSinglePage: true, size: "small" }}
        dataSource={q.data?.items ?? []}
        columns={[
          { title: t("definition"), dataIndex: "definitionKey" },
          { title: t("node"), dataIndex: "nodeKey" },
          { title: t("nodes.backlog"), dataIndex: "backlog", align: "right", render: formatCount },
          { title: t("handled"), dataIndex: "handled", align: "right", render: (n: number) => approx(rough, "handled", formatCount(n)) },
          { title: t("avgHandling"), dataIndex: "avgHandlingMs", align: "right", render: (ms: number | null) => approx(rough, "avgHandlingMs", formatDuration(ms)) },
          { title: t("nodes.p90"), dataIndex: "p90HandlingMs", align: "right", render: (ms: number | null) => approx(rough, "p90HandlingMs", formatDuration(ms)) },
        ]}
      />
    </PanelCard>
  );
}

export function ApproverWorkloadPanel({ definitionKey }: Props) {
  const { t } = useTranslation("analytics");
  const q = usePanel("approverWorkload", definitionKey);
  const rough = q.data?.estimated;
  return (
    <PanelCard title={t("workload.title")} testId="panel-approver-workload" loading={q.isLoading} error={q.error} extra={<PeriodNote days={q.data?.periodDays} />}>
      <Table<Schemas["ApproverLoad"]>
        size="small"
        rowKey="assignee"
        pagination={{ pageSize: 8, hideOnSinglePage: true, size: "small" }}
        dataSource={q.data?.items ?? []}
        columns={[
          { title: t("workload.assignee"), dataIndex: "assignee" },
          { title: t("workload.pending"), dataIndex: "pending", align: "right", render: formatCount },
          { title: t("handled"), dataIndex: "handled", align: "right", render: (n: number) => approx(rough, "handled", formatCount(n)) },
          { title: t("avgHandling"), dataIndex: "avgHandlingMs", align: "right", render: (ms: number | null) => approx(rough, "avgHandlingMs", formatDuration(ms)) },
        ]}
      />
    </PanelCard>
  );
}
