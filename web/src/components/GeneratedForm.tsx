// A form generated from a definition's form schema (fields: key, type,
// required, enum, label): starting an instance, and a task's form.
import { DatePicker, Form, Input, InputNumber, Select, Switch } from "antd";
import type { FormInstance } from "antd";
import dayjs, { type Dayjs } from "dayjs";
import { useTranslation } from "react-i18next";

export interface FieldSpec {
  key: string;
  type: "string" | "number" | "integer" | "boolean" | "date" | "object" | "array";
  required?: boolean;
  enum?: unknown[] | null;
  label?: string | null;
}

export function formFields(source: unknown): FieldSpec[] {
  const form = (source as { form?: { fields?: FieldSpec[] } } | null)?.form;
  return Array.isArray(form?.fields) ? form!.fields : [];
}

/** The form's values as the API expects them (dates as YYYY-MM-DD, JSON parsed). */
export function toFormData(fields: FieldSpec[], values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = values[f.key];
    if (v === undefined || v === null || v === "") continue;
    if (f.type === "date") out[f.key] = (v as Dayjs).format("YYYY-MM-DD");
    else if (f.type === "object" || f.type === "array") out[f.key] = JSON.parse(String(v));
    else out[f.key] = v;
  }
  return out;
}

export function fromFormData(fields: FieldSpec[], data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = data[f.key];
    if (v === undefined) continue;
    if (f.type === "date" && typeof v === "string") out[f.key] = dayjs(v);
    else if (f.type === "object" || f.type === "array") out[f.key] = JSON.stringify(v);
    else out[f.key] = v;
  }
  return out;
}

export function GeneratedForm({ fields, form, disabled }: { fields: FieldSpec[]; form: FormInstance; disabled?: boolean }) {
  const { t } = useTranslation();
  return (
    <Form form={form} layout="vertical" disabled={disabled} data-testid="generated-form">
      {fields.map((f) => {
        const rules = [{ required: !!f.required, message: t("form.required", { field: f.label ?? f.key }) }];
        const label = f.label ?? f.key;
        const testId = `field-${f.key}`;
        if (f.enum?.length)
          return (
            <Form.Item key={f.key} name={f.key} label={label} rules={rules}>
              <Select data-testid={testId} options={f.enum.map((v) => ({ value: v as string, label: String(v) }))} />
            </Form.Item>
          );
        switch (f.type) {
          case "number":
          case "integer":
            return (
              <Form.Item key={f.key} name={f.key} label={label} rules={rules}>
                <InputNumber style={{ width: "100%" }} precision={f.type === "integer" ? 0 : undefined} data-testid={testId} />
              </Form.Item>
            );
          case "boolean":
            return (
              <Form.Item key={f.key} name={f.key} label={label} valuePropName="checked">
                <Switch data-testid={testId} />
              </Form.Item>
            );
          case "date":
            return (
              <Form.Item key={f.key} name={f.key} label={label} rules={rules}>
                <DatePicker style={{ width: "100%" }} data-testid={testId} />
              </Form.Item>
            );
          case "object":
          case "array":
            return (
              <Form.Item key={f.key} name={f.key} label={label} rules={rules} extra={t("form.json")}>
                <Input.TextArea rows={3} data-testid={testId} />
              </Form.Item>
            );
          default:
            return (
              <Form.Item key={f.key} name={f.key} label={label} rules={rules}>
                <Input data-testid={testId} />
              </Form.Item>
            );
        }
      })}
    </Form>
  );
}
