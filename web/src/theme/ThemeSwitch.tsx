// The header's color scheme switch: follow the system, light or dark; the
// choice is remembered (localStorage) by the theme provider.
import { useTranslation } from "react-i18next";
import { Choice } from "../components/Choice";
import { PREFERENCES, type Preference } from "./preference";
import { useTheme } from "./ThemeProvider";

export function ThemeSwitch() {
  const { t } = useTranslation();
  const { preference, setPreference } = useTheme();
  return (
    <Choice<Preference>
      data-testid="theme-switch"
      label={t("theme.label")}
      value={preference}
      onChange={setPreference}
      options={PREFERENCES.map((p) => ({ value: p, label: <span data-testid={`theme-${p}`}>{t(`theme.${p}`)}</span> }))}
    />
  );
}
