// The console's two themes on Ant Design's algorithms (default and dark)
// and the colors drawn outside Ant Design's components (the run diagram's
// node states, the definition diagram, the charts), one set per scheme.
// The light theme's seed colors are darker than Ant Design's defaults so
// that text in them (links, primary buttons, status tags, secondary text)
// meets WCAG AA contrast (4.5:1), which axe-core checks; the dark theme
// lightens the colors used as text on the dark background for the same reason.
import { theme, type ThemeConfig } from "antd";
import type { Scheme } from "./preference";

const LIGHT: ThemeConfig = {
  algorithm: theme.defaultAlgorithm,
  token: {
    colorPrimary: "#0958d9",
    colorInfo: "#0958d9",
    colorLink: "#0958d9",
    colorSuccess: "#237804",
    colorWarning: "#ad4e00",
    colorError: "#cf1322",
    colorTextDescription: "rgba(0, 0, 0, 0.62)",
    colorTextTertiary: "rgba(0, 0, 0, 0.62)",
    // the status fills stay Ant Design's pale ones (derived from the darker
    // seeds they would turn grey)
    colorSuccessBg: "#f6ffed",
    colorSuccessBorder: "#b7eb8f",
    colorWarningBg: "#fff7e6",
    colorWarningBorder: "#ffd591",
    colorErrorBg: "#fff2f0",
    colorErrorBorder: "#ffccc7",
    colorInfoBg: "#e6f4ff",
    colorInfoBorder: "#91caff",
    // a colored tag's text is the palette's 7th shade: these are too light on their fill
    green7: "#237804",
    gold7: "#874d00",
    orange7: "#ad4e00",
    lime7: "#3f6600",
    cyan7: "#006d75",
    volcano7: "#ad2102",
    yellow7: "#7c6e00",
  },
};

const DARK: ThemeConfig = {
  algorithm: theme.darkAlgorithm,
  token: {
    // lighter seeds: primary and error colors are text too (menu, tabs,
    // tags, danger buttons), and text on the dark background needs light
    // colors; solid fills then carry black text instead of white
    colorPrimary: "#69b1ff",
    colorInfo: "#69b1ff",
    colorError: "#ff7875",
    colorTextLightSolid: "#000000",
    colorLink: "#69b1ff",
    colorTextDescription: "rgba(255, 255, 255, 0.65)",
    colorTextTertiary: "rgba(255, 255, 255, 0.65)",
  },
};

export function themeConfig(scheme: Scheme, motion: boolean): ThemeConfig {
  const base = scheme === "dark" ? DARK : LIGHT;
  return { ...base, token: { ...base.token, motion } };
}

export interface StateColor {
  border: string;
  background: string;
  text: string;
}

/** The run diagram's node states: a border, a fill and the text on it (a
 * node's badge is its border color with the scheme's badge text on it). */
export const STATE_PALETTE: Record<Scheme, Record<string, StateColor>> = {
  light: {
    done: { border: "#237804", background: "#f6ffed", text: "#000000" },
    active: { border: "#0958d9", background: "#e6f4ff", text: "#000000" },
    waiting: { border: "#ad4e00", background: "#fff7e6", text: "#000000" },
    failed: { border: "#cf1322", background: "#fff1f0", text: "#000000" },
    skipped: { border: "#595959", background: "#f5f5f5", text: "#000000" },
    not_reached: { border: "#6e6e6e", background: "#ffffff", text: "#000000" },
  },
  dark: {
    done: { border: "#49aa19", background: "#162312", text: "#ffffff" },
    active: { border: "#3c89e8", background: "#111a2c", text: "#ffffff" },
    waiting: { border: "#d87a16", background: "#2b1d11", text: "#ffffff" },
    failed: { border: "#dc4446", background: "#2c1618", text: "#ffffff" },
    skipped: { border: "#8c8c8c", background: "#262626", text: "#ffffff" },
    not_reached: { border: "#7f7f7f", background: "#141414", text: "#ffffff" },
  },
};

/** Colors of the diagrams' other marks (selection, taken edges, joins, problems). */
export const DIAGRAM_PALETTE: Record<Scheme, { selected: string; taken: string; untaken: string; join: string; problem: string; problemBg: string; node: string; nodeBorder: string; text: string; muted: string; badgeText: string }> = {
  light: { selected: "#722ed1", taken: "#0958d9", untaken: "#8c8c8c", join: "#874d00", problem: "#cf1322", problemBg: "#fff1f0", node: "#ffffff", nodeBorder: "#4096ff", text: "#000000", muted: "#595959", badgeText: "#ffffff" },
  dark: { selected: "#b37feb", taken: "#69b1ff", untaken: "#8c8c8c", join: "#e8b339", problem: "#ff7875", problemBg: "#2c1618", node: "#1f1f1f", nodeBorder: "#3c89e8", text: "#ffffff", muted: "#bfbfbf", badgeText: "#000000" },
};
