// Paused pools and job types (issue 31 item 3), in the runtime status panel:
// who paused each, why and since when, with a resume button; and pausing a
// pool or a job type with a reason. Claims skip a paused scope's pending
// jobs, which stay pending; resuming wakes the workers at once.
import { useState } from "react";
import { App, Button, Form, Input, Modal, Radio, Select, Space, Table, Tag, Typography } from "antd";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { ErrorAlert, useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { jobKeys, jobPausesQuery } from "../../api/queries/jobs";

type Pause = Schemas["JobPausePublic"];
type Scope = "pool" | "job_type";


function scopeBody(scope: Scope, value: string) {
  return scope === "pool" ? { pool: value } : { jobType: value };
}

function PauseDialog({ pools, types, onClose }: { pools: string[]; types: string[]; onClose: () => void }) {
  const { t } = useTranslation("jobs");
  const { message } = App.useApp();
  const client = useQueryClient();
  const [scope, setScope] = useState<Scope>("pool");
  const [value, setValue] = useState<string | undefined>();
  const [reason, setReason] = useState("");
  const pause = useMutation({
    mutationFn: () => unwrap(api.POST("/api/workflows/engine/job-pauses", { body: { ...scopeBody(scope, value!), reason: reason.trim() } })),
    onSuccess: async (p) => {
      message.success(t("pauses.pausedDone", { value: p.value }));
      await client.invalidateQueries({ queryKey: jobKeys.runtime() });
      onClose();
    },
  });
  return (
    <Modal
      open
      title={t("pauses.pauseTitle")}
      onCancel={onClose}
      onOk={() => pause.mutate()}
      okText={t("pauses.pause")}
      cancelText={t("common:cancel")}
      okButtonProps={{ danger: true, disabled: !value || !reason.trim(), loading: pause.isPending, ...({ "data-testid": "pause-submit" } as Record<string, string>) }}
    >
      <div data-testid="pause-dialog">
        <Typography.Paragraph type="secondary">{t("pauses.help")}</Typography.Paragraph>
        {pause.error ? <ErrorAlert error={pause.error} /> : null}
        <Form layout="vertical">
          <Form.Item label={t("pauses.scope")}>
            <Radio.Group
              value={scope}
              onChange={(e) => {
                setScope(e.target.value as Scope);
                setValue(undefined);
              }}
              data-testid="pause-scope"
            >
              <Radio value="pool">{t("pauses.kind.pool")}</Radio>
              <Radio value="job_type">{t("pauses.kind.job_type")}</Radio>
            </Radio.Group>
          </Form.Item>
          <Form.Item label={t(`pauses.kind.${scope}`)} required>
            <Select
              showSearch
              value={value}
              onChange={setValue}
              options={(scope === "pool" ? pools : types).map((v) => ({ value: v, label: v }))}
              data-testid="pause-value"
              aria-label={t(`pauses.kind.${scope}`)}
            />
          </Form.Item>
          <Form.Item label={t("pauses.reason")} required>
            <Input.TextArea rows={2} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} data-testid="pause-reason" />
          </Form.Item>
        </Form>
      </div>
    </Modal>
  );
}

export function PausedScopes() {
  const { t } = useTranslation("jobs");
  const { message } = App.useApp();
  const showError = useShowError();
  const client = useQueryClient();
  const [pausing, setPausing] = useState(false);
  const pauses = useQuery({ ...jobPausesQuery(), refetchInterval: 5_000, placeholderData: keepPreviousData });
  const resume = useMutation({
    mutationFn: (p: Pause) => unwrap(api.POST("/api/workflows/engine/job-pauses/resume", { body: scopeBody(p.scope, p.value) })),
    onSuccess: async (p) => {
      message.success(t("pauses.resumedDone", { value: p.value }));
      await client.invalidateQueries({ queryKey: jobKeys.runtime() });
    },
    onError: showError,
  });
  const items = pauses.data?.items ?? [];
  return (
    <div data-testid="paused-scopes" style={{ marginTop: 12 }}>
      <Space style={{ marginBottom: 8 }}>
        <Typography.Text strong>{t("pauses.title")}</Typography.Text>
        <Tag color={items.length ? "warning" : "default"} data-testid="paused-count">{items.length ? t("pauses.count", { n: items.length }) : t("pauses.none")}</Tag>
        <Button size="small" onClick={() => setPausing(true)} data-testid="pause-open">{t("pauses.pauseOpen")}</Button>
      </Space>
      {pauses.error ? <ErrorAlert error={pauses.error} /> : null}
      {items.length > 0 && (
        <Table<Pause>
          size="small"
          rowKey={(p) => `${p.scope}:${p.value}`}
          pagination={false}
          dataSource={items}
          onRow={(p) => ({ "data-testid": `paused-${p.scope}-${p.value}` }) as React.HTMLAttributes<HTMLElement>}
          columns={[
            { title: t("pauses.scope"), dataIndex: "scope", render: (s: Scope) => <Tag>{t(`pauses.kind.${s}`)}</Tag> },
            { title: t("pauses.value"), dataIndex: "value" },
            { title: t("pauses.pausedBy"), dataIndex: "pausedBy" },
            { title: t("pauses.reason"), dataIndex: "reason" },
            { title: t("pauses.since"), dataIndex: "since", render: formatTime },
            {
              title: "",
              render: (_, p) => (
                <Button size="small" type="link" onClick={() => resume.mutate(p)} loading={resume.isPending && resume.variables === p} data-testid={`resume-${p.scope}-${p.value}`}>
                  {t("pauses.resume")}
                </Button>
              ),
            },
          ]}
        />
      )}
      {pausing && <PauseDialog pools={pauses.data?.knownPools ?? []} types={pauses.data?.knownJobTypes ?? []} onClose={() => setPausing(false)} />}
    </div>
  );
}
