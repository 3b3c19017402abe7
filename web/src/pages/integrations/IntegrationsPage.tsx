// Connectors and automation rules: two tabs, list and edit. The tab is in
// the URL (?tab=rules); each tab's list keeps its own page (useListState).
import { Tabs } from "antd";
import { useSearchParams } from "react-router-dom";
import { useSetParam } from "../../components/useSetParam";
import { useTranslation } from "react-i18next";
import { ConnectorsTab } from "./ConnectorsTab";
import { RulesTab } from "./RulesTab";

export default function IntegrationsPage() {
  const { t } = useTranslation("integrations");
  const [params] = useSearchParams();
  const setParam = useSetParam();
  return (
    <div data-testid="page-integrations">
      <Tabs
        activeKey={params.get("tab") ?? "connectors"}
        onChange={(tab) => setParam("tab", tab)}
        items={[
          { key: "connectors", label: <span data-testid="tab-connectors">{t("tabs.connectors")}</span>, children: <ConnectorsTab /> },
          { key: "rules", label: <span data-testid="tab-rules">{t("tabs.rules")}</span>, children: <RulesTab /> },
        ]}
      />
    </div>
  );
}
