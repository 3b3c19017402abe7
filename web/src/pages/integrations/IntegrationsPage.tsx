// Connectors and automation rules: two tabs, list and edit.
import { Tabs } from "antd";
import { useSearchParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { ConnectorsTab } from "./ConnectorsTab";
import { RulesTab } from "./RulesTab";

export default function IntegrationsPage() {
  const { t } = useTranslation("integrations");
  const [params, setParams] = useSearchParams();
  return (
    <div data-testid="page-integrations">
      <Tabs
        activeKey={params.get("tab") ?? "connectors"}
        onChange={(tab) => setParams({ tab })}
        items={[
          { key: "connectors", label: <span data-testid="tab-connectors">{t("tabs.connectors")}</span>, children: <ConnectorsTab /> },
          { key: "rules", label: <span data-testid="tab-rules">{t("tabs.rules")}</span>, children: <RulesTab /> },
        ]}
      />
    </div>
  );
}
