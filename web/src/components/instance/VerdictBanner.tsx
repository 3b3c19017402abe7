// The top of the drawer: the verdict (the one reason the instance is not
// moving, with its one-click repair) and the consistency conclusions with
// their levels, each with its own repair and, when the health inspection
// reports the same problem, its rule there (one diagnosis). Their texts are worded in the
// active language from the API's messageParams (findingText.ts).
import { Alert, Button, List, Space, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { conclusionText, verdictText } from "./findingText";
import { asRepair, type RepairRequest } from "./repairs";
import type { Diagnostics } from "../../api/diagnosticsDocument";

export function VerdictBanner({ doc, onRepair }: { doc: Diagnostics; onRepair: (r: RepairRequest) => void }) {
  const { t } = useTranslation("instance");
  const repair = asRepair(doc.verdict);
  const critical = doc.conclusions.some((c) => c.level === "critical");
  const type = critical ? "error" : doc.conclusions.length || repair ? "warning" : "success";
  return (
    <Alert
      data-testid="drawer-verdict"
      data-action={repair?.action ?? ""}
      type={type}
      showIcon
      message={<Typography.Text strong>{t("verdict.title")}</Typography.Text>}
      description={<span data-testid="drawer-verdict-message">{verdictText(t, doc.verdict)}</span>}
      action={
        repair && (
          <Button type="primary" danger={critical} onClick={() => onRepair(repair)} data-testid="verdict-repair">
            {t(`repair.${repair.action}`)}
          </Button>
        )
      }
      style={{ marginBottom: 12 }}
    />
  );
}

export function Conclusions({ doc, onRepair }: { doc: Diagnostics; onRepair: (r: RepairRequest) => void }) {
  const { t } = useTranslation(["instance", "health"]);
  if (!doc.conclusions.length) return null;
  return (
    <List
      size="small"
      bordered
      data-testid="drawer-conclusions"
      header={<Typography.Text strong>{t("conclusions.title")}</Typography.Text>}
      style={{ marginBottom: 12 }}
      dataSource={doc.conclusions}
      renderItem={(c, i) => {
        const repair = asRepair(c.repair);
        const ev = c.evidence;
        return (
          <List.Item
            data-testid="conclusion"
            data-rule={c.rule}
            data-health-rule={c.healthRule ?? ""}
            actions={repair ? [<Button key="r" size="small" onClick={() => onRepair(repair)} data-testid={`conclusion-repair-${i}`}>{t(`repair.${repair.action}`)}</Button>] : []}
          >
            <Space direction="vertical" size={0}>
              <Space>
                <Tag color={c.level === "critical" ? "red" : "orange"}>{t(`level.${c.level === "critical" ? "critical" : "warning"}`)}</Tag>
                <Typography.Text code>{c.rule}</Typography.Text>
                <span data-testid="conclusion-message">{conclusionText(t, c)}</span>
              </Space>
              {c.healthRule && (
                <Typography.Text type="secondary" style={{ fontSize: 12 }} data-testid="conclusion-health-rule">
                  {t("conclusions.healthRule", { rule: t(`health:rule.${c.healthRule}`, { defaultValue: c.healthRule }) })}
                </Typography.Text>
              )}
              {(ev.taskIds.length > 0 || ev.tokenIds.length > 0 || ev.jobIds.length > 0) && (
                <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                  {t("conclusions.evidence", { tasks: ev.taskIds.join(", ") || "—", tokens: ev.tokenIds.join(", ") || "—", jobs: ev.jobIds.join(", ") || "—" })}
                </Typography.Text>
              )}
            </Space>
          </List.Item>
        );
      }}
    />
  );
}
