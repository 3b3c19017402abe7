// Signing in: a one-time code in the URL fragment (/login#code=…, printed by
// `flowledger run`) is exchanged for a session token; otherwise a token is
// typed in. The code never reaches the server's request line or log.
import { useEffect, useRef, useState } from "react";
import { Alert, Button, Card, Form, Input, Space, Typography, theme } from "antd";
import { useNavigate, useSearchParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, unwrap } from "../../api/client";
import { clearToken, setToken } from "../../auth/session";
import { describeError } from "../../components/errors";
import { setLanguage, type Language } from "../../i18n";
import { HOME } from "../registry";
import { Choice } from "../../components/Choice";

export default function LoginPage() {
  const { t, i18n } = useTranslation("login");
  const { token: colors } = theme.useToken();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const exchanged = useRef(false);

  useEffect(() => {
    const code = new URLSearchParams(window.location.hash.slice(1)).get("code");
    if (!code || exchanged.current) return;
    exchanged.current = true;
    window.history.replaceState(null, "", "/login");
    setBusy(true);
    unwrap(api.POST("/api/workflows/console/session", { body: { code } }))
      .then((session) => {
        setToken(session.token);
        navigate(HOME, { replace: true });
      })
      .catch((e: unknown) => setError(describeError(e).message))
      .finally(() => setBusy(false));
  }, [navigate]);

  async function submit(values: { token: string }) {
    setBusy(true);
    setError(null);
    setToken(values.token.trim());
    try {
      await unwrap(api.GET("/api/workflows/me"));
      navigate(HOME, { replace: true });
    } catch (e) {
      clearToken();
      setError(describeError(e).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <div style={{ display: "flex", justifyContent: "center", alignItems: "flex-start", paddingTop: "12vh", minHeight: "100vh", background: colors.colorBgLayout }}>
      <Card style={{ width: 500, maxWidth: "calc(100vw - 32px)" }} title={t("title")} extra={
        <Choice
          label={t("common:language")}
          data-testid="language-switch"
          value={i18n.language}
          options={[{ value: "zh-CN", label: "中文" }, { value: "en", label: "English" }]}
          onChange={(value) => void setLanguage(value as Language)}
        />
      }>
        <Space direction="vertical" style={{ width: "100%" }}>
          {params.get("expired") && <Alert type="warning" showIcon message={t("expired")} />}
          {error && <Alert type="error" showIcon message={error} data-testid="login-error" />}
          <Form layout="vertical" onFinish={submit}>
            <Form.Item name="token" label={t("token")} rules={[{ required: true, message: t("tokenRequired") }]}>
              <Input.Password data-testid="login-token" autoComplete="off" />
            </Form.Item>
            <Button type="primary" htmlType="submit" loading={busy} block data-testid="login-submit">
              {t("submit")}
            </Button>
          </Form>
          <Typography.Text type="secondary">{t("hint")}</Typography.Text>
        </Space>
      </Card>
    </div>
  );
}
