// O-14 timeouts: overdue pending tasks, those due within 24 h and within the
// due-soon window (4 h), those a deadline escalated (issue 31 item 4), then
// the overdue list (most overdue first), each row linking to its instance.
import { Col, Row, Statistic, Table, Typography, theme } from "antd";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { formatTime } from "../../components/format";
import { formatCount, formatDuration } from "../../components/units";
import { InstanceLink } from "../../components/InstanceLink";
import { DeadlineBadges } from "../../components/DeadlineBadges";
import { PanelCard } from "./PanelCard";
import { usePanel } from "./useAnalytics";

export function TimeoutsPanel({ definitionKey }: { definitionKey?: string }) {
  const { t } = useTranslation("analytics");
  const { token } = theme.useToken();
  const q = usePanel("timeouts", definitionKey);
  const d = q.data;
  return (
    <PanelCard title={t("timeouts.title")} testId="panel-timeouts" loading={q.isLoading} error={q.error}>
      <Row gutter={16} style={{ marginBottom: 12 }}>
        <Col span={6}>
          <Statistic title={t("timeouts.overdue")} value={d?.overdue ?? 0} valueRender={() => <span data-testid="timeouts-overdue">{formatCount(d?.overdue)}</span>} valueStyle={{ color: d?.overdue ? token.colorError : undefined }} />
        </Col>
        <Col span={6}>
          <Statistic title={t("timeouts.dueWithin24h")} value={d?.dueWithin24h ?? 0} valueRender={() => <span data-testid="timeouts-due24h">{formatCount(d?.dueWithin24h)}</span>} />
        </Col>
        <Col span={6}>
          <Statistic title={t("timeouts.dueSoon")} value={d?.dueSoon ?? 0} valueRender={() => <span data-testid="timeouts-due-soon">{formatCount(d?.dueSoon)}</span>} />
        </Col>
        <Col span={6}>
          <Statistic title={t("timeouts.escalated")} value={d?.escalated ?? 0} valueRender={() => <span data-testid="timeouts-escalated">{formatCount(d?.escalated)}</span>} />
        </Col>
      </Row>
      <Table<Schemas["OverdueTask"]>
        data-testid="overdue-table"
        size="small"
        rowKey="taskId"
        pagination={{ pageSize: 8, hideOnSinglePage: true, size: "small" }}
        dataSource={d?.overdueTasks ?? []}
        locale={{ emptyText: <Typography.Text type="secondary">{t("timeouts.none")}</Typography.Text> }}
        columns={[
          { title: t("timeouts.task"), dataIndex: "taskId", render: (id: number) => `#${id}` },
          { title: t("timeouts.instance"), dataIndex: "instanceId", render: (id: number) => <InstanceLink id={id} /> },
          { title: t("definition"), dataIndex: "definitionKey" },
          { title: t("node"), dataIndex: "nodeKey" },
          { title: t("workload.assignee"), dataIndex: "assignee" },
          { title: t("timeouts.dueAt"), dataIndex: "dueAt", render: formatTime },
          { title: t("timeouts.overdueBy"), dataIndex: "overdueSeconds", align: "right", render: (s: number) => formatDuration(s * 1000) },
          { title: t("timeouts.escalatedCol"), dataIndex: "escalatedAt", render: (at: string | null | undefined) => <DeadlineBadges states={at ? ["escalated"] : []} escalatedAt={at} /> },
        ]}
      />
    </PanelCard>
  );
}
