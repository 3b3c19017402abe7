// The health inspection's filter bar: threshold (10 minutes to 1 day), rule and
// level. The rule and level choices are the summary's keys (the API counts
// every rule, with zeros), each with its count at this threshold.
import { Select, Space, Typography } from "antd";
import type { SelectProps } from "antd";
import { useTranslation } from "react-i18next";
import { THRESHOLDS, thresholdLabel, type HealthQuery, type Level, type Rule } from "./query";
import { formatCount } from "../../components/units";

function Labeled<T extends string | number>({ label, testId, ...props }: { label: string; testId: string } & SelectProps<T>) {
  return (
    <Space>
      <Typography.Text>{label}</Typography.Text>
      <Select<T> data-testid={testId} aria-label={label} {...props} />
    </Space>
  );
}

export function FilterBar({ query, byRule, byLevel, onChange }: { query: HealthQuery; byRule: Record<string, number>; byLevel: Record<string, number>; onChange: (q: HealthQuery) => void }) {
  const { t } = useTranslation("health");
  const counted = (label: string, n: number | undefined) => ({ title: label, label: n === undefined ? label : `${label} (${formatCount(n)})` });
  return (
    <Space wrap size="large">
      <Labeled<number>
        label={t("filter.threshold")}
        testId="health-threshold"
        style={{ width: 130 }}
        value={query.thresholdMinutes}
        options={THRESHOLDS.map((m) => ({ value: m, label: thresholdLabel(t, m), title: thresholdLabel(t, m) }))}
        onChange={(m) => onChange({ ...query, thresholdMinutes: m })}
      />
      <Labeled<Rule>
        label={t("filter.rule")}
        testId="health-rule"
        allowClear
        virtual={false}
        style={{ width: 300 }}
        placeholder={t("filter.allRules")}
        value={query.rule}
        options={Object.entries(byRule).map(([r, n]) => ({ value: r as Rule, ...counted(t(`rule.${r}`), n) }))}
        onChange={(r) => onChange({ ...query, rule: r })}
      />
      <Labeled<Level>
        label={t("filter.level")}
        testId="health-level"
        allowClear
        style={{ width: 150 }}
        placeholder={t("filter.allLevels")}
        value={query.level}
        options={Object.entries(byLevel).map(([l, n]) => ({ value: l as Level, ...counted(t(`level.${l}`), n) }))}
        onChange={(l) => onChange({ ...query, level: l })}
      />
    </Space>
  );
}
