// The filter form of 实例监控: every filter of the instance list; submitting
// it writes the URL (the page reads its query from there).
import { Button, DatePicker, Form, Input, InputNumber, Select, Space } from "antd";
import dayjs, { type Dayjs } from "dayjs";
import { useTranslation } from "react-i18next";
import { DEADLINE_FILTERS, INSTANCE_STATUSES, type InstanceQuery } from "./filters";

type Range = [Dayjs | null, Dayjs | null] | null;
interface Values {
  definitionKey?: string;
  definitionVersion?: number | null;
  status?: InstanceQuery["status"];
  initiator?: string;
  created?: Range;
  finished?: Range;
  currentNode?: string;
  currentAssignee?: string;
  hasError?: "true" | "false" | null;
  stuckMinutes?: number | null;
  keyword?: string;
  deadline?: InstanceQuery["deadline"] | null;
}

const range = (from?: string, to?: string): Range => (from || to ? [from ? dayjs(from) : null, to ? dayjs(to) : null] : null);
const iso = (d: Dayjs | null | undefined) => (d ? d.format() : undefined);
const text = (v?: string) => (v?.trim() ? v.trim() : undefined);

export function FilterBar({ query, onApply }: { query: InstanceQuery; onApply: (q: InstanceQuery) => void }) {
  const { t } = useTranslation("instances");
  const initial: Values = {
    ...query,
    created: range(query.createdFrom, query.createdTo),
    finished: range(query.finishedFrom, query.finishedTo),
    hasError: query.hasError === undefined ? null : query.hasError ? "true" : "false",
  };
  const submit = (v: Values) =>
    onApply({
      definitionKey: text(v.definitionKey),
      definitionVersion: v.definitionVersion ?? undefined,
      status: v.status?.length ? v.status : undefined,
      initiator: text(v.initiator),
      createdFrom: iso(v.created?.[0]),
      createdTo: iso(v.created?.[1]),
      finishedFrom: iso(v.finished?.[0]),
      finishedTo: iso(v.finished?.[1]),
      currentNode: text(v.currentNode),
      currentAssignee: text(v.currentAssignee),
      hasError: v.hasError ? v.hasError === "true" : undefined,
      stuckMinutes: v.stuckMinutes ?? undefined,
      keyword: text(v.keyword),
      deadline: v.deadline ?? undefined,
    });
  return (
    <Form<Values> layout="inline" key={JSON.stringify(query)} initialValues={initial} onFinish={submit} style={{ rowGap: 8 }}>
      <Form.Item name="keyword" label={t("filter.keyword")}>
        <Input allowClear data-testid="filter-keyword" data-shortcut="search" placeholder={t("filter.keywordHint")} style={{ width: 220 }} />
      </Form.Item>
      <Form.Item name="definitionKey" label={t("filter.definition")}>
        <Input allowClear data-testid="filter-definition" style={{ width: 150 }} />
      </Form.Item>
      <Form.Item name="definitionVersion" label={t("filter.version")}>
        <InputNumber min={1} data-testid="filter-version" style={{ width: 80 }} />
      </Form.Item>
      <Form.Item name="status" label={t("filter.status")}>
        <Select
          mode="multiple"
          allowClear
          style={{ minWidth: 180 }}
          data-testid="filter-status"
          options={INSTANCE_STATUSES.map((s) => ({ value: s, label: t(`common:status.${s}`) }))}
        />
      </Form.Item>
      <Form.Item name="initiator" label={t("filter.initiator")}>
        <Input allowClear data-testid="filter-initiator" style={{ width: 120 }} />
      </Form.Item>
      <Form.Item name="created" label={t("filter.created")}>
        <DatePicker.RangePicker showTime allowEmpty={[true, true]} data-testid="filter-created" />
      </Form.Item>
      <Form.Item name="finished" label={t("filter.finished")}>
        <DatePicker.RangePicker showTime allowEmpty={[true, true]} data-testid="filter-finished" />
      </Form.Item>
      <Form.Item name="currentNode" label={t("filter.node")}>
        <Input allowClear data-testid="filter-node" style={{ width: 130 }} />
      </Form.Item>
      <Form.Item name="currentAssignee" label={t("filter.assignee")}>
        <Input allowClear data-testid="filter-assignee" style={{ width: 120 }} />
      </Form.Item>
      <Form.Item name="hasError" label={t("filter.hasError")}>
        <Select
          allowClear
          style={{ width: 100 }}
          data-testid="filter-has-error"
          options={[
            { value: "true", label: t("common:yes") },
            { value: "false", label: t("common:no") },
          ]}
        />
      </Form.Item>
      <Form.Item name="deadline" label={t("filter.deadline")}>
        <Select
          allowClear
          style={{ width: 120 }}
          data-testid="filter-deadline"
          options={DEADLINE_FILTERS.map((d) => ({ value: d, label: t(`common:deadline.${d}`) }))}
        />
      </Form.Item>
      <Form.Item name="stuckMinutes" label={t("filter.stuck")}>
        <InputNumber min={1} addonAfter={t("filter.minutes")} data-testid="filter-stuck" style={{ width: 140 }} />
      </Form.Item>
      <Space>
        <Button type="primary" htmlType="submit" data-testid="filter-apply">
          {t("filter.apply")}
        </Button>
        <Button onClick={() => onApply({})} data-testid="filter-reset">
          {t("filter.reset")}
        </Button>
      </Space>
    </Form>
  );
}
