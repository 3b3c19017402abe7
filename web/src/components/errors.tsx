// Showing an API error: its message and the field it names, never a blank page.
import { Alert, App } from "antd";
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
