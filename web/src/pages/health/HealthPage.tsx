// 健康巡检 (Health inspection, SPEC O-16): the threshold (10 minutes to 1 day),
// rule and level filters — all in the URL, pinnable by a saved view — the
// summary counts and score, and the problems grouped by rule with links to
// each instance's drawer and to its suggested repair.
import { useMemo } from "react";
import { Button, Card, Col, Row, Space, Statistic, Typography, theme } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { formatTime } from "../../components/format";
import { PagedList } from "../../components/PagedList";
import { useListState } from "../../components/useListState";
import { HealthViews } from "./HealthViews";
import { ProblemTable } from "./ProblemTable";
import { FilterBar } from "./FilterBar";
import { HEALTH_FILTERS, readHealthQuery, thresholdLabel, writeHealthQuery, type HealthQuery } from "./query";
import { formatCount } from "../../components/units";
import { healthInspectionQuery } from "../../api/queries/engine";

export default function HealthPage() {
  const { t } = useTranslation("health");
  const { token } = theme.useToken();
  const list = useListState(HEALTH_FILTERS);
  const query = useMemo(() => readHealthQuery(list.values), [list.values]);
  const viewParam = Number(list.params.get("view"));
  const viewId = Number.isInteger(viewParam) && viewParam > 0 ? viewParam : null;

  // a filter change keeps the open drawer (?instance=) and, when asked, the picked view
  const update = (q: HealthQuery, view: number | null = null) => list.setFilters(writeHealthQuery(q), { view });

  const inspection = useQuery({
    ...healthInspectionQuery(query, list.pager.cursor),
    placeholderData: keepPreviousData,
  });
  const data = inspection.data;
  const byLevel = data?.summary.byLevel ?? {};
  const total = Object.values(data?.summary.byRule ?? {}).reduce((a, b) => a + b, 0);

  return (
    <div data-testid="page-health">
      <Card size="small" style={{ marginBottom: 16 }}>
        <Space wrap size="large">
          <FilterBar query={query} byRule={data?.summary.byRule ?? {}} byLevel={byLevel} onChange={(q) => update(q)} />
          <Button onClick={() => update({ thresholdMinutes: query.thresholdMinutes })} data-testid="health-reset">{t("filter.reset")}</Button>
          <HealthViews query={query} viewId={viewId} onPick={(id, q) => update(q ?? query, id)} />
        </Space>
      </Card>
      <Row gutter={16} style={{ marginBottom: 16 }}>
        {[
          { key: "score", value: data?.summary.score },
          { key: "total", value: data ? total : undefined },
          { key: "critical", value: data ? (byLevel.critical ?? 0) : undefined },
          { key: "warning", value: data ? (byLevel.warning ?? 0) : undefined },
        ].map((s) => (
          <Col xs={12} md={6} key={s.key}>
            <Card size="small" data-testid={`health-summary-${s.key}`}>
              <Statistic
                title={t(`summary.${s.key}`)}
                value={s.key === "score" ? (s.value ?? "—") : formatCount(s.value)}
                suffix={s.key === "score" && data ? "/ 100" : undefined}
                valueStyle={s.key === "critical" && s.value ? { color: token.colorError } : s.key === "warning" && s.value ? { color: token.colorWarning } : undefined}
              />
            </Card>
          </Col>
        ))}
      </Row>
      <Card
        size="small"
        title={t("table.title", { threshold: thresholdLabel(t, query.thresholdMinutes) })}
        extra={<Typography.Text type="secondary">{data ? t("table.asOf", { time: formatTime(data.now) }) : ""}</Typography.Text>}
      >
        <PagedList
          query={inspection}
          pager={list.pager}
          body={(items) => <ProblemTable items={items} byRule={data?.summary.byRule ?? {}} loading={inspection.isLoading} />}
        />
      </Card>
    </div>
  );
}
