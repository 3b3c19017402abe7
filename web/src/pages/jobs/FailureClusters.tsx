// Failure clusters (SPEC L-25) by one of four dimensions — error reason,
// type, instance, traceId — within the ledger's current filters; each with
// its samples and "replay this cluster" (the cluster's own filter).
import { Button, Card, Empty, List, Space, Tag, Typography } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { ErrorAlert } from "../../components/errors";
import { formatTime } from "../../components/format";
import { formatCount } from "../../components/units";
import type { JobQuery } from "./filters";

import { clustersQuery, type ClusterBy } from "./queries";
import { ActionLink } from "../../components/ActionLink";
import { Choice } from "../../components/Choice";

export type { ClusterBy };
type Cluster = Schemas["FailureCluster"];

export function FailureClusters(props: {
  query: JobQuery;
  by: ClusterBy;
  onBy: (by: ClusterBy) => void;
  onReplay: (filter: Record<string, unknown>) => void;
  onOpenJob: (id: number) => void;
}) {
  const { t } = useTranslation("jobs");
  const clusters = useQuery({
    ...clustersQuery(props.by, props.query),
    placeholderData: keepPreviousData,
  });
  return (
    <Card
      size="small"
      title={t("clusters.title")}
      data-testid="failure-clusters"
      extra={
        <Choice<ClusterBy>
          data-testid="cluster-by"
          label={t("clusters.byLabel")}
          size="small"
          value={props.by}
          onChange={props.onBy}
          options={(["reason", "type", "instance", "trace"] as ClusterBy[]).map((b) => ({ value: b, label: t(`clusters.by_${b}`) }))}
        />
      }
    >
      {clusters.error ? <ErrorAlert error={clusters.error} /> : null}
      {clusters.data && clusters.data.items.length === 0 ? (
        <Empty description={t("clusters.none")} />
      ) : (
        <List<Cluster>
          loading={clusters.isLoading}
          dataSource={clusters.data?.items ?? []}
          renderItem={(c) => (
            <List.Item
              data-testid="cluster"
              actions={[
                <Button key="replay" size="small" disabled={!c.filter} title={c.filter ? undefined : t("clusters.noFilter")} onClick={() => c.filter && props.onReplay(c.filter)} data-testid="cluster-replay">
                  {t("clusters.replay")}
                </Button>,
              ]}
            >
              <List.Item.Meta
                title={
                  <Space wrap>
                    <Tag color="red">{formatCount(c.count)}</Tag>
                    <Typography.Text strong>{c.key === null || c.key === undefined ? t("clusters.unkeyed") : String(c.key)}</Typography.Text>
                    {c.types.map((ty) => (
                      <Tag key={ty.type}>{`${ty.type} × ${formatCount(ty.count)}`}</Tag>
                    ))}
                  </Space>
                }
                description={
                  <Space direction="vertical" size={2}>
                    {c.pattern && <Typography.Text type="secondary" ellipsis style={{ maxWidth: "60vw" }}>{c.pattern}</Typography.Text>}
                    <Typography.Text type="secondary">{t("clusters.seen", { first: formatTime(c.firstSeenAt), last: formatTime(c.lastSeenAt) })}</Typography.Text>
                    <Space wrap>
                      {t("clusters.samples")}
                      {c.samples.map((s) => (
                        <ActionLink key={s.jobId} onClick={() => props.onOpenJob(s.jobId)}>#{s.jobId}</ActionLink>
                      ))}
                    </Space>
                  </Space>
                }
              />
            </List.Item>
          )}
        />
      )}
    </Card>
  );
}
