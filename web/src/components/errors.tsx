// Showing an API error: its message and the field it names, never a blank page.
import { Alert, App, type FormInstance } from "antd";
import { useTranslation } from "react-i18next";
import { ApiError } from "../api/client";

export function describeError(error: unknown): { message: string; field: string | null; code: string } {
  if (error instanceof ApiError) return { message: error.message, field: error.field, code: error.code };
  return { message: String((error as Error)?.message ?? error), field: null, code: "error" };
}

export function ErrorAlert({ error }: { error: unknown }) {
  const { t } = useTranslation();
  if (!error) return null;
  const { message, field, code } = describeError(error);
  return (
    <Alert
      type="error"
      showIcon
      data-testid="error-alert"
      message={message}
      description={field ? t("error.field", { field, code }) : code}
    />
  );
}

/** A callback that shows an error as a notification. */
export function useShowError() {
  const { notification } = App.useApp();
  const { t } = useTranslation();
  return (error: unknown) => {
    const { message, field, code } = describeError(error);
    notification.error({
      message,
      description: field ? t("error.field", { field, code }) : code,
    });
  };
}

/** Puts an API error on the form field it names and returns true, or returns
 * false when it names none of `fields`. The API's `body.` prefix is dropped
 * and a list index (`channels.email.0`) names its list; `aliases` maps an API
 * field (or its prefix: `channels.webhook` covers `channels.webhook.url`) to
 * a form field. */
export function setFieldError<T>(
  form: FormInstance<T>,
  error: unknown,
  fields: readonly (keyof T & string)[],
  aliases: Record<string, keyof T & string> = {},
): boolean {
  const { message, field } = describeError(error);
  if (!field) return false;
  const api = field.replace(/^body\./, "");
  const alias = Object.keys(aliases)
    .filter((k) => api === k || api.startsWith(`${k}.`))
    .sort((a, b) => b.length - a.length)[0];
  const name = alias ? aliases[alias] : fields.find((f) => f === api.replace(/(\.\d+)+$/, ""));
  if (!name) return false;
  const text = message.startsWith(`${field}: `) ? message.slice(field.length + 2) : message;
  form.setFields([{ name, errors: [text] }] as Parameters<FormInstance<T>["setFields"]>[0]);
  return true;
}
