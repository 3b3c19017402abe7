// Form data: the current values, an operator's correction of one field with
// a reason (PATCH /instances/{id}/form), then the retry of the failed job the
// wrong value broke; and the write history.
import { useState } from "react";
import { App, Button, Card, Descriptions, Form, Input, Select, Space, Table, Typography } from "antd";
import { useMutation } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap } from "../../api/client";
import { ErrorAlert } from "../errors";
import { formatJson, formatTime } from "../format";
import { ReasonInput, blank } from "./ReasonInput";
import type { Diagnostics, FormView as FormData, Job } from "../../api/diagnosticsDocument";

interface Field {
  key: string;
  type?: string;
}

function parse(value: string, type: string | undefined): unknown {
  if (type === "number" || type === "integer") return Number(value);
  if (type === "boolean") return value.trim() === "true";
  if (type === "object" || type === "array") return JSON.parse(value) as unknown;
  return value;
}

export function FormView({ doc, onDone, onRetry }: { doc: Diagnostics; onDone: () => void; onRetry: (job: Job) => void }) {
  const { t } = useTranslation("instance");
  const { message } = App.useApp();
  const snapshot = (doc.definition.snapshot ?? {}) as { form?: { fields?: Field[] } };
  const fields: Field[] = snapshot.form?.fields ?? Object.keys(doc.form.data).map((key) => ({ key }));
  const [field, setField] = useState<string | undefined>();
  const [value, setValue] = useState("");
  const [reason, setReason] = useState("");
  const type = fields.find((f) => f.key === field)?.type;
  const correct = useMutation({
    mutationFn: () =>
      unwrap(
        api.PATCH("/api/workflows/instances/{instanceId}/form", {
          params: { path: { instanceId: doc.instance.id } },
          body: { changes: { [field!]: parse(value, type) }, reason },
        }),
      ),
    onSuccess: () => {
      void message.success(t("form.done", { field }));
      setReason("");
      onDone();
    },
  });
  const failed = [...doc.triggers, ...doc.trace.jobChain.jobs].find((j) => j.instanceId === doc.instance.id && ["failed", "dead"].includes(j.status));
  const running = doc.instance.status === "running" || doc.instance.status === "suspended";
  return (
    <div data-testid="view-form">
      <Descriptions size="small" bordered column={2} data-testid="form-data">
        {Object.entries(doc.form.data).map(([k, v]) => (
          <Descriptions.Item key={k} label={k}>
            {formatJson(v)}
          </Descriptions.Item>
        ))}
      </Descriptions>
      {running && (
        <Card size="small" title={t("form.correct")} style={{ marginTop: 12 }} data-testid="form-correct">
          <Form layout="vertical">
            <Space align="start" wrap>
              <Form.Item label={t("form.field")} required>
                <Select
                  style={{ width: 220 }}
                  value={field}
                  onChange={(k: string) => {
                    setField(k);
                    setValue(formatJson(doc.form.data[k] ?? ""));
                  }}
                  options={fields.map((f) => ({ value: f.key, label: f.type ? `${f.key} (${f.type})` : f.key }))}
                  data-testid="form-field"
                />
              </Form.Item>
              <Form.Item label={t("form.value")} required>
                <Input style={{ width: 320 }} value={value} onChange={(e) => setValue(e.target.value)} data-testid="form-value" />
              </Form.Item>
            </Space>
            <ReasonInput value={reason} onChange={setReason} testId="form-reason" />
            <Space>
              <Button type="primary" disabled={!field || blank(reason)} loading={correct.isPending} onClick={() => correct.mutate()} data-testid="form-submit">
                {t("form.submit")}
              </Button>
              {failed && (
                <Button onClick={() => onRetry(failed)} data-testid="form-retry-job">
                  {t("form.retryJob", { id: failed.id, type: failed.type })}
                </Button>
              )}
            </Space>
          </Form>
          <ErrorAlert error={correct.error} />
        </Card>
      )}
      <Typography.Title level={5} style={{ marginTop: 16 }}>
        {t("form.history")}
      </Typography.Title>
      <Table<FormData["history"][number]>
        size="small"
        rowKey="id"
        data-testid="form-history"
        pagination={doc.form.history.length > 20 ? { pageSize: 20 } : false}
        dataSource={doc.form.history}
        columns={[
          { title: "#", dataIndex: "id" },
          { title: t("col.createdAt"), dataIndex: "createdAt", render: formatTime },
          { title: t("form.writtenBy"), dataIndex: "writtenBy" },
          { title: t("form.source"), dataIndex: "source" },
          { title: t("form.changes"), dataIndex: "changes", render: (v: unknown) => <code>{JSON.stringify(v)}</code> },
        ]}
      />
    </div>
  );
}
