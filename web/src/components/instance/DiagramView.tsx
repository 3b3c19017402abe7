// The diagram tab: the run diagram, and for a clicked node its tasks,
// tokens and jobs.
import { useState } from "react";
import { Card, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { RunDiagram } from "./RunDiagram";
import { RunTag } from "./RunTag";
import { JobTable } from "./TraceView";
import { TasksTable, TokensTable } from "./TablesViews";
import type { Diagnostics } from "../../api/diagnosticsDocument";

export function DiagramView({ doc }: { doc: Diagnostics }) {
  const { t } = useTranslation("instance");
  const [picked, setPicked] = useState<string | null>(null);
  const node = doc.nodes.find((n) => n.key === picked);
  return (
    <div data-testid="view-diagram">
      <RunDiagram doc={doc} onPick={setPicked} selected={picked} />
      {node ? (
        <Card
          size="small"
          style={{ marginTop: 12 }}
          data-testid="diagram-node-detail"
          title={
            <span>
              {t("diagram.nodeTitle", { node: node.name ?? node.key, type: node.type, visits: node.visits })} <RunTag status={node.state} />
            </span>
          }
        >
          <Typography.Text strong>{t("tabs.tasks")}</Typography.Text>
          <TasksTable tasks={doc.tasks.filter((tk) => tk.nodeKey === node.key)} />
          <Typography.Text strong>{t("tabs.tokens")}</Typography.Text>
          <TokensTable tokens={doc.tokens.items.filter((tk) => tk.nodeKey === node.key)} />
          <Typography.Text strong>{t("diagram.jobs")}</Typography.Text>
          <JobTable jobs={doc.trace.jobChain.jobs.filter((j) => j.nodeKey === node.key && j.instanceId === doc.instance.id)} />
        </Card>
      ) : (
        <Typography.Paragraph type="secondary" style={{ marginTop: 8 }}>
          {t("diagram.clickHint")}
        </Typography.Paragraph>
      )}
    </div>
  );
}
