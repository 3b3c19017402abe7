// The shell: side navigation in the seeds' vocabulary, the language switch,
// the signed-in user and logout. 流程监控 shows its tabs (one route each).
import { Suspense } from "react";
import { Button, Layout, Menu, Space, Spin, Tabs, Typography, theme } from "antd";
import { Outlet, useLocation, useNavigate } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { useQuery } from "@tanstack/react-query";
import { api } from "../api/client";
import { meQuery } from "../api/queries/session";
import { clearToken } from "../auth/session";
import { setLanguage, type Language } from "../i18n";
import { MONITOR_TABS, PAGES } from "../pages/registry";
import { InstanceDrawerHost } from "../components/instance/InstanceDrawerHost";
import { useShortcuts } from "../components/useShortcuts";
import "../theme/focus.css";
import { Choice } from "../components/Choice";
import { ThemeSwitch } from "../theme/ThemeSwitch";
import { LiveIndicator } from "./LiveIndicator";

export function AppLayout() {
  const { t, i18n } = useTranslation();
  const location = useLocation();
  const navigate = useNavigate();
  const shortcutsHelp = useShortcuts();
  const { token } = theme.useToken();
  const me = useQuery(meQuery());
  const current = PAGES.find((p) => location.pathname.startsWith(p.path));
  const selected = current?.group ?? current?.key ?? "";
  const items = [
    { key: "monitor", label: t("nav.monitor"), "data-testid": "nav-monitor" },
    ...PAGES.filter((p) => !p.group).map((p) => ({ key: p.key, label: t(`nav.${p.key}`), "data-testid": `nav-${p.key}` })),
  ];

  async function logout() {
    try {
      await api.POST("/api/workflows/console/logout");
    } finally {
      clearToken();
      navigate("/login", { replace: true });
    }
  }

  return (
    <Layout style={{ minHeight: "100vh" }}>
      <Layout.Sider width={224} theme="light" style={{ borderRight: `1px solid ${token.colorBorderSecondary}`, background: token.colorBgContainer }}>
        <div style={{ padding: "16px 20px", fontWeight: 600, fontSize: 18 }}>flowledger</div>
        <Menu
          mode="inline"
          selectedKeys={[selected]}
          items={items}
          onClick={({ key }) => navigate(key === "monitor" ? MONITOR_TABS[0].path : PAGES.find((p) => p.key === key)!.path)}
        />
      </Layout.Sider>
      <Layout>
        <Layout.Header
          style={{ background: token.colorBgContainer, display: "flex", justifyContent: "flex-end", alignItems: "center", borderBottom: `1px solid ${token.colorBorderSecondary}` }}
        >
          <Space size="large">
            <LiveIndicator />
            <ThemeSwitch />
            <Choice
              label={t("language")}
              data-testid="language-switch"
              value={i18n.language}
              options={[
                { value: "zh-CN", label: "中文" },
                { value: "en", label: "English" },
              ]}
              onChange={(value) => void setLanguage(value as Language)}
            />
            <Typography.Text data-testid="current-user">{me.data ? t("user.signedInAs", { name: me.data.displayName }) : ""}</Typography.Text>
            <Button onClick={logout} data-testid="logout">
              {t("user.logout")}
            </Button>
          </Space>
        </Layout.Header>
        <Layout.Content style={{ padding: 20 }}>
          {current?.group === "monitor" && (
            <>
              <Typography.Title level={4} style={{ marginTop: 0 }}>
                {t("nav.monitor")}
              </Typography.Title>
              <Tabs
                activeKey={current.key}
                onChange={(key) => navigate(MONITOR_TABS.find((p) => p.key === key)!.path)}
                items={MONITOR_TABS.map((p) => ({ key: p.key, label: <span data-testid={`tab-${p.key}`}>{t(`nav.${p.key}`)}</span> }))}
              />
            </>
          )}
          {current && !current.group && (
            <Typography.Title level={4} style={{ marginTop: 0 }}>
              {t(`nav.${current.key}`)}
            </Typography.Title>
          )}
          <Suspense fallback={<Spin />}>
            <Outlet />
          </Suspense>
          <InstanceDrawerHost />
          {shortcutsHelp}
        </Layout.Content>
      </Layout>
    </Layout>
  );
}
