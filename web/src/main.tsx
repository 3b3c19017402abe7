import React from "react";
import ReactDOM from "react-dom/client";
import { BrowserRouter } from "react-router-dom";
import { QueryClientProvider } from "@tanstack/react-query";
import { App as AntApp } from "antd";
import enUS from "antd/es/locale/en_US";
import zhCN from "antd/es/locale/zh_CN";
import { useTranslation } from "react-i18next";
import { i18nReady } from "./i18n";
import { queryClient } from "./api/queryClient";
import { meQuery } from "./api/queries/session";
import { getToken } from "./auth/session";
import { App } from "./App";
import { preloadPage } from "./pages/registry";
import { preloadInstanceDrawer } from "./components/instance/InstanceDrawerHost";
import { ThemeProvider } from "./theme/ThemeProvider";
import { applyScheme, readPreference, resolveScheme, systemScheme } from "./theme/preference";

// with a session, the first screen's reads start now, while the page's code
// and the language files load (not after the first render)
const signedIn = Boolean(getToken()) && !window.location.pathname.startsWith("/login");
const client = signedIn ? queryClient : null;
const namespaces = [
  ...preloadPage(window.location.pathname, window.location.search, client),
  ...preloadInstanceDrawer(window.location.search, client),
];
if (signedIn) void queryClient.prefetchQuery(meQuery());
// the scheme is on <html> before the first paint (no white flash in dark mode)
applyScheme(resolveScheme(readPreference(), systemScheme()));

function Root() {
  const { i18n } = useTranslation();
  return (
    <ThemeProvider locale={i18n.language === "zh-CN" ? zhCN : enUS}>
      <AntApp>
        <QueryClientProvider client={queryClient}>
          {/* React Router v7's behaviour now (no console warning): navigation
              updates in startTransition, relative paths in splat routes
              resolved from the splat's own path (every link here is absolute) */}
          <BrowserRouter future={{ v7_startTransition: true, v7_relativeSplatPath: true }}>
            <App />
          </BrowserRouter>
        </QueryClientProvider>
      </AntApp>
    </ThemeProvider>
  );
}

void i18nReady(namespaces).then(() =>
  ReactDOM.createRoot(document.getElementById("root")!).render(
    <React.StrictMode>
      <Root />
    </React.StrictMode>,
  ),
);
