// 数据分析 (Analytics, SPEC O-14): every panel of the analytics API under one
// definition filter kept in the URL (?definitionKey=…), so a view can be
// shared; the other URL parameters (an open ?instance= drawer) are kept.
import { Button, Col, Row, Select, Space, Typography } from "antd";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useSearchParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { AsyncHealthPanel } from "./AsyncHealthPanel";
import { DailyChart } from "./DailyChart";
import { ApproverWorkloadPanel, NodeBottlenecksPanel, TopDefinitionsPanel } from "./RankingPanels";
import { TimeoutsPanel } from "./TimeoutsPanel";
import { TotalsPanel } from "./TotalsPanel";
import { analyticsKeys } from "../../api/queries/analytics";
import { definitionCatalogQuery } from "../../api/queries/definitions";

export const DEFINITION_PARAM = "definitionKey";

function useDefinitionOptions(current: string | undefined) {
  const list = useQuery({
    ...definitionCatalogQuery(),
    staleTime: 60_000,
  });
  const keys = new Map((list.data?.items ?? []).map((d) => [d.key, d.name]));
  if (current && !keys.has(current)) keys.set(current, current);
  return [...keys].sort(([a], [b]) => a.localeCompare(b)).map(([key, name]) => ({ value: key, label: name === key ? key : `${key} · ${name}` }));
}

export default function AnalyticsPage() {
  const { t } = useTranslation("analytics");
  const client = useQueryClient();
  const [params, setParams] = useSearchParams();
  const definitionKey = params.get(DEFINITION_PARAM) || undefined;
  const options = useDefinitionOptions(definitionKey);

  function pick(key: string | undefined) {
    const next = new URLSearchParams(params);
    if (key) next.set(DEFINITION_PARAM, key);
    else next.delete(DEFINITION_PARAM);
    setParams(next);
  }

  const props = { definitionKey };
  return (
    <div data-testid="analytics-page">
      <Space style={{ marginBottom: 16 }} wrap>
        <Typography.Text>{t("filter.definition")}</Typography.Text>
        <Select
          data-testid="filter-definition" aria-label={t("filter.definition")}
          style={{ minWidth: 280 }}
          allowClear
          showSearch
          placeholder={t("filter.all")}
          value={definitionKey}
          options={options}
          onChange={(v?: string) => pick(v)}
        />
        <Button onClick={() => void client.invalidateQueries({ queryKey: analyticsKeys.all() })} data-testid="analytics-refresh">
          {t("common:refresh")}
        </Button>
      </Space>
      <Row gutter={[16, 16]}>
        <Col span={24}>
          <TotalsPanel {...props} />
        </Col>
        <Col xs={24} xl={12}>
          <DailyChart {...props} />
        </Col>
        <Col xs={24} xl={12}>
          <TopDefinitionsPanel {...props} onPick={pick} />
        </Col>
        <Col xs={24} xl={12}>
          <NodeBottlenecksPanel {...props} />
        </Col>
        <Col xs={24} xl={12}>
          <ApproverWorkloadPanel {...props} />
        </Col>
        <Col span={24}>
          <TimeoutsPanel {...props} />
        </Col>
        <Col span={24}>
          <AsyncHealthPanel {...props} />
        </Col>
      </Row>
    </div>
  );
}
