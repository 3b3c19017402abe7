// The instance's snapshot drawn with its run state, on the definitions
// page's diagram (React Flow + dagre): nodes coloured by state, taken edges
// highlighted, a badge with the live tokens and open tasks of each node, the
// branches an open join still awaits. `onPick` receives a clicked node.
import { useMemo } from "react";
import { Space, Tag } from "antd";
import { useTranslation } from "react-i18next";
import { Diagram, type Decorations } from "../../pages/definitions/Diagram";
import { useTheme } from "../../theme/ThemeProvider";
import { DIAGRAM_PALETTE, STATE_PALETTE } from "../../theme/tokens";
import type { Diagnostics } from "../../api/diagnosticsDocument";

export const STATES = ["done", "active", "waiting", "failed", "skipped", "not_reached"] as const;

export function RunDiagram({ doc, onPick, selected, height = 560 }: { doc: Diagnostics; onPick?: (key: string) => void; selected?: string | null; height?: number }) {
  const { t } = useTranslation("instance");
  const { scheme } = useTheme();
  const palette = STATE_PALETTE[scheme];
  const marks = DIAGRAM_PALETTE[scheme];
  const decorations = useMemo<Decorations>(() => {
    const states = new Map(doc.diagram.nodes.map((n) => [n.key, n.state]));
    const runs = new Map(doc.nodes.map((n) => [n.key, n]));
    const live = new Map<string, number>();
    doc.tokens.items.filter((tk) => tk.state !== "consumed").forEach((tk) => live.set(tk.nodeKey, (live.get(tk.nodeKey) ?? 0) + 1));
    const joins = new Map(doc.tokens.joins.map((j) => [j.joinNode, j]));
    const taken = new Set(doc.diagram.edges.filter((e) => e.taken).map((e) => `${e.from}->${e.to}`));
    return {
      node: (key) => {
        const state = states.get(key) ?? "not_reached";
        const colors = palette[state] ?? palette.not_reached;
        const tokens = live.get(key) ?? 0;
        const tasks = runs.get(key)?.openTaskIds.length ?? 0;
        const join = joins.get(key);
        return {
          attrs: { "data-state": state },
          style: {
            border: `${key === selected ? 3 : 2}px ${state === "skipped" ? "dashed" : "solid"} ${key === selected ? marks.selected : colors.border}`,
            background: colors.background,
            color: colors.text,
            cursor: onPick ? "pointer" : undefined,
          },
          extra: (
            <div style={{ fontSize: 11 }}>
              <span data-testid={`diagram-state-${key}`}>{t(`state.${state}`)}</span>
              {tokens + tasks > 0 && (
                <span data-testid={`diagram-badge-${key}`} style={{ marginLeft: 6, padding: "0 6px", borderRadius: 8, background: colors.border, color: marks.badgeText }}>
                  {t("diagram.badge", { tokens, tasks })}
                </span>
              )}
              {join && (
                <div data-testid={`diagram-join-${key}`} style={{ color: marks.join }}>
                  {t("diagram.awaiting", { branches: join.awaited.map((b) => b.branch).join(", "), arrived: join.arrived.length, expected: join.expected })}
                </div>
              )}
            </div>
          ),
        };
      },
      edge: (from, to) => (taken.has(`${from}->${to}`) ? { stroke: marks.taken, strokeWidth: 3 } : { stroke: marks.untaken, strokeDasharray: "4 4" }),
    };
  }, [doc, onPick, selected, t, palette, marks]);
  return (
    <div data-testid="run-diagram">
      <Space wrap style={{ marginBottom: 8 }}>
        {STATES.map((s) => (
          <Tag key={s} style={{ background: palette[s].background, borderColor: palette[s].border, color: palette[s].text }}>
            {t(`state.${s}`)}
          </Tag>
        ))}
        <Tag style={{ borderColor: marks.taken, color: marks.taken }}>{t("diagram.taken")}</Tag>
      </Space>
      <Diagram source={doc.diagram} decorations={decorations} onNodeClick={onPick} height={height} />
    </div>
  );
}
