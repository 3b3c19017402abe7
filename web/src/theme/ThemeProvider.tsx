// The theme in force (issue 33 item 3): the stored preference resolved
// against the system's scheme, Ant Design's ConfigProvider with that
// scheme's algorithm and tokens (and motion off when the operator prefers
// reduced motion), <html> marked with the scheme. `useTheme()` gives the
// scheme to what Ant Design does not draw (diagrams, charts) and lets the
// switch in the header change the preference.
import { createContext, useContext, useLayoutEffect, useMemo, useState, type ReactNode } from "react";
import { ConfigProvider } from "antd";
import type { Locale } from "antd/es/locale";
import { useReducedMotion } from "../components/useReducedMotion";
import { applyScheme, readPreference, resolveScheme, storePreference, useSystemScheme, type Preference, type Scheme } from "./preference";
import { themeConfig } from "./tokens";

interface ThemeState {
  preference: Preference;
  scheme: Scheme;
  setPreference: (preference: Preference) => void;
}

const ThemeContext = createContext<ThemeState>({ preference: "system", scheme: "light", setPreference: () => {} });

export function useTheme(): ThemeState {
  return useContext(ThemeContext);
}

export function ThemeProvider({ locale, children }: { locale: Locale; children: ReactNode }) {
  const [preference, setStored] = useState<Preference>(readPreference);
  const system = useSystemScheme();
  const scheme = resolveScheme(preference, system);
  const reducedMotion = useReducedMotion();
  useLayoutEffect(() => applyScheme(scheme), [scheme]);
  const state = useMemo<ThemeState>(
    () => ({
      preference,
      scheme,
      setPreference: (next) => {
        storePreference(next);
        setStored(next);
      },
    }),
    [preference, scheme],
  );
  const config = useMemo(() => themeConfig(scheme, !reducedMotion), [scheme, reducedMotion]);
  return (
    <ThemeContext.Provider value={state}>
      <ConfigProvider locale={locale} theme={config}>
        {children}
      </ConfigProvider>
    </ThemeContext.Provider>
  );
}
