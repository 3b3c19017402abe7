// The status badges: how many instances match the filter in each status
// (GET /instances/counts ignores `status`, so every badge keeps its number
// while one is selected); choosing one filters by that status.
import { Tag } from "antd";
import { useTranslation } from "react-i18next";
import type { Schemas } from "../../api/client";
import { INSTANCE_STATUSES, type InstanceStatus } from "./filters";
import { Choice } from "../../components/Choice";
import { formatCount } from "../../components/units";

const ALL = "all";

export function StatusCounts(props: {
  counts: Schemas["InstanceCounts"] | undefined;
  status: InstanceStatus[] | undefined;
  onChange: (status: InstanceStatus[] | undefined) => void;
}) {
  const { t } = useTranslation("instances");
  const value = !props.status?.length ? ALL : props.status.length === 1 ? props.status[0] : "";
  // a figure the planner estimated (an exact count would read millions of
  // rows) reads "≈ n" and says so on hover; "all" is estimated with any of them
  const estimated = new Set(props.counts?.estimatedStatuses ?? []);
  const badge = (key: string, label: string, n: number | undefined) => {
    const rough = key === ALL ? estimated.size > 0 : estimated.has(key);
    return (
      <span data-testid={`count-${key}`}>
        {label}{" "}
        <Tag
          bordered={false}
          color={key === ALL ? "blue" : undefined}
          data-count={n ?? ""}
          data-estimated={rough ? "true" : undefined}
          title={rough ? t("counts.estimated") : undefined}
          style={{ marginInlineEnd: 0 }}
        >
          {n === undefined ? "…" : `${rough ? "≈ " : ""}${formatCount(n)}`}
        </Tag>
      </span>
    );
  };
  return (
    <Choice
      label={t("counts.label")}
      data-testid="status-counts"
      value={value}
      onChange={(v) => props.onChange(v === ALL ? undefined : [v as InstanceStatus])}
      options={[
        { value: ALL, label: badge(ALL, t("counts.all"), props.counts?.total) },
        ...INSTANCE_STATUSES.map((s) => ({ value: s, label: badge(s, t(`common:status.${s}`), props.counts?.counts[s]) })),
      ]}
    />
  );
}
