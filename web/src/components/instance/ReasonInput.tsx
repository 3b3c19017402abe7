// The reason every repair asks for: required, its confirm button disabled
// while it is blank.
import { Form, Input, type ButtonProps } from "antd";
import { useTranslation } from "react-i18next";

export function ReasonInput({ value, onChange, label, testId = "repair-reason" }: { value: string; onChange: (v: string) => void; label?: string; testId?: string }) {
  const { t } = useTranslation("instance");
  const name = label ?? t("repair.reason");
  return (
    <Form.Item label={name} required style={{ marginBottom: 8 }}>
      <Input.TextArea aria-label={name} aria-required rows={2} value={value} onChange={(e) => onChange(e.target.value)} data-testid={testId} maxLength={2000} />
    </Form.Item>
  );
}

export function blank(value: string): boolean {
  return value.trim() === "";
}

/** The confirm button of a repair dialog: disabled until it may be sent. */
export function confirmProps(disabled: boolean, loading: boolean): ButtonProps {
  return { disabled, loading, ...({ "data-testid": "repair-confirm" } as ButtonProps) };
}
