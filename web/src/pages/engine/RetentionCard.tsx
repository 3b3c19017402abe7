// 数据保留 (data retention, SPEC O-20; issue 34 item 2): the last retention
// run on the engine diagnostics page — when it started, its status, how long
// it took, the rows it removed and the attempt-history partitions it dropped
// whole (PostgreSQL). Read from the runs list (newest first, one run).
import { Card, Col, Row, Statistic, Tag, Typography } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { formatTime } from "../../components/format";
import { useLiveInterval } from "../../live/context";
import { retentionRunsQuery } from "../../api/queries/engine";

const STATUS_COLOR: Record<string, string> = { succeeded: "green", running: "blue", failed: "red" };

export function RetentionCard() {
  const { t } = useTranslation("engine");
  const runs = useQuery({
    ...retentionRunsQuery(1),
    refetchInterval: useLiveInterval(60_000),
    placeholderData: keepPreviousData,
  });
  const last = runs.data?.items[0];
  return (
    <Card size="small" title={t("retention.title")} style={{ marginBottom: 16 }} data-testid="engine-retention">
      {last ? (
        <Row gutter={16}>
          <Col xs={12} md={6}>
            <Statistic title={t("retention.startedAt")} value={formatTime(last.startedAt)} valueStyle={{ fontSize: 16 }} />
            <Tag color={STATUS_COLOR[last.status] ?? "default"} data-testid="engine-retention-status">
              {t(`retention.status.${last.status}`, { defaultValue: last.status })}
            </Tag>
          </Col>
          <Col xs={12} md={6}>
            <Statistic
              title={t("retention.duration")}
              value={last.durationMs ?? "—"}
              suffix={last.durationMs == null ? undefined : "ms"}
              data-testid="engine-retention-duration"
            />
          </Col>
          <Col xs={12} md={6}>
            <Statistic title={t("retention.rows")} value={last.rowsRemoved} data-testid="engine-retention-rows" />
          </Col>
          <Col xs={12} md={6}>
            <Statistic title={t("retention.partitions")} value={last.partitionsDropped} data-testid="engine-retention-partitions" />
          </Col>
        </Row>
      ) : (
        <Typography.Text type="secondary" data-testid="engine-retention-none">
          {runs.isLoading ? "…" : t("retention.none")}
        </Typography.Text>
      )}
    </Card>
  );
}
