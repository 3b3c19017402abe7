import { Suspense, lazy } from "react";
import { Spin } from "antd";
import { Navigate, Route, Routes } from "react-router-dom";
import { getToken } from "./auth/session";
import { AppLayout } from "./layout/AppLayout";
import { LiveEventsProvider } from "./live/LiveEvents";
import { HOME, PAGES } from "./pages/registry";

const LoginPage = lazy(() => import("./pages/login/LoginPage"));

function RequireSession({ children }: { children: JSX.Element }) {
  return getToken() ? children : <Navigate to="/login" replace />;
}

export function App() {
  return (
    <Suspense fallback={<Spin style={{ margin: 40 }} />}>
      <Routes>
        <Route path="/login" element={<LoginPage />} />
        <Route
          element={
            <RequireSession>
              <LiveEventsProvider>
                <AppLayout />
              </LiveEventsProvider>
            </RequireSession>
          }
        >
          {PAGES.map((p) => (
            <Route key={p.key} path={p.path} element={<p.component />} />
          ))}
          <Route path="/monitor" element={<Navigate to={HOME} replace />} />
          <Route path="*" element={<Navigate to={HOME} replace />} />
        </Route>
      </Routes>
    </Suspense>
  );
}
