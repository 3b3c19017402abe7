// A definition's process diagram: React Flow, laid out by dagre (left to
// right). Nodes and edges named by a validation problem are drawn red with
// the problem's message beside them. The instance drawer draws the run state
// on the same diagram through `decorations` (a style, attributes and a badge
// per node, a style per edge) and `onNodeClick`.
import { useMemo, type CSSProperties, type ReactNode } from "react";
import { Background, Controls, MarkerType, ReactFlow, type Edge, type Node } from "@xyflow/react";
import dagre from "@dagrejs/dagre";
import "@xyflow/react/dist/style.css";
import { useTranslation } from "react-i18next";
import { useTheme } from "../../theme/ThemeProvider";
import { DIAGRAM_PALETTE } from "../../theme/tokens";

export interface Problem {
  code: string;
  message: string;
  node?: string | null;
  edge?: string | null;
  field?: string | null;
}

interface SourceNode {
  key: string;
  type?: string;
  name?: string;
}
interface SourceEdge {
  from: string;
  to: string;
  condition?: string;
  default?: boolean;
  on?: string;
}

export interface NodeDecoration {
  style?: CSSProperties;
  extra?: ReactNode;
  attrs?: Record<string, string>;
}
export interface Decorations {
  node?: (key: string) => NodeDecoration | undefined;
  edge?: (from: string, to: string) => CSSProperties | undefined;
}

const WIDTH = 180;
const HEIGHT = 56;

export function Diagram({
  source,
  problems = [],
  decorations,
  onNodeClick,
  height = 460,
}: {
  source: unknown;
  problems?: Problem[];
  decorations?: Decorations;
  onNodeClick?: (key: string) => void;
  height?: number;
}) {
  const { t } = useTranslation("definitions");
  const { scheme } = useTheme();
  const palette = DIAGRAM_PALETTE[scheme];
  const labels = useMemo(() => ({ default: t("diagram.default"), on: (v: string) => t("diagram.on", { on: v }) }), [t]);
  const { nodes, edges } = useMemo(() => layout(source, problems, labels, palette, decorations), [source, problems, labels, palette, decorations]);
  return (
    <div style={{ height, border: `1px solid ${palette.untaken}`, borderRadius: 6 }} data-testid="diagram">
      <ReactFlow
        nodes={nodes}
        edges={edges}
        colorMode={scheme}
        fitView
        nodesConnectable={false}
        nodesDraggable={false}
        proOptions={{ hideAttribution: true }}
        onNodeClick={onNodeClick ? (_event, node) => onNodeClick(node.id) : undefined}
      >
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}

function layout(
  source: unknown,
  problems: Problem[],
  labels: { default: string; on: (v: string) => string },
  palette: (typeof DIAGRAM_PALETTE)["light"],
  decorations?: Decorations,
): { nodes: Node[]; edges: Edge[] } {
  const src = (source ?? {}) as { nodes?: SourceNode[]; edges?: SourceEdge[] };
  const srcNodes = Array.isArray(src.nodes) ? src.nodes.filter((n) => n && typeof n.key === "string") : [];
  const srcEdges = Array.isArray(src.edges) ? src.edges.filter((e) => e && typeof e.from === "string" && typeof e.to === "string") : [];
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 30, ranksep: 60 });
  g.setDefaultEdgeLabel(() => ({}));
  const keys = new Set(srcNodes.map((n) => n.key));
  srcNodes.forEach((n) => g.setNode(n.key, { width: WIDTH, height: HEIGHT }));
  srcEdges.forEach((e) => {
    if (keys.has(e.from) && keys.has(e.to)) g.setEdge(e.from, e.to);
  });
  dagre.layout(g);
  const nodeProblems = (key: string) => problems.filter((p) => p.node === key && !p.edge);
  const edgeProblems = (e: SourceEdge) => problems.filter((p) => p.edge === `${e.from}->${e.to}`);
  const nodes: Node[] = srcNodes.map((n) => {
    const pos = g.node(n.key);
    const issues = nodeProblems(n.key);
    const decor = decorations?.node?.(n.key);
    return {
      id: n.key,
      position: { x: (pos?.x ?? 0) - WIDTH / 2, y: (pos?.y ?? 0) - HEIGHT / 2 },
      data: {
        label: (
          <div
            data-testid={`diagram-node-${n.key}`}
            data-problem={issues.length ? "true" : undefined}
            title={issues.map((p) => p.message).join("\n")}
            {...decor?.attrs}
          >
            <div style={{ fontWeight: 600 }}>{n.name ?? n.key}</div>
            <div style={{ fontSize: 11, color: palette.muted }}>{n.type}</div>
            {issues.map((p, i) => (
              <div key={i} style={{ fontSize: 11, color: palette.problem }}>
                {p.message}
              </div>
            ))}
            {decor?.extra}
          </div>
        ),
      },
      style: {
        width: WIDTH,
        border: `1px solid ${issues.length ? palette.problem : palette.nodeBorder}`,
        background: issues.length ? palette.problemBg : palette.node,
        color: palette.text,
        ...decor?.style,
      },
      sourcePosition: "right" as Node["sourcePosition"],
      targetPosition: "left" as Node["targetPosition"],
    };
  });
  const edges: Edge[] = srcEdges
    .filter((e) => keys.has(e.from) && keys.has(e.to))
    .map((e, i) => {
      const issues = edgeProblems(e);
      const label = issues.length ? issues.map((p) => p.message).join("; ") : e.condition ?? (e.default ? labels.default : e.on ? labels.on(e.on) : undefined);
      return {
        id: `${e.from}->${e.to}-${i}`,
        source: e.from,
        target: e.to,
        label,
        markerEnd: { type: MarkerType.ArrowClosed },
        style: issues.length ? { stroke: palette.problem, strokeWidth: 2 } : decorations?.edge?.(e.from, e.to),
        labelStyle: issues.length ? { fill: palette.problem } : undefined,
        data: { problem: issues.length > 0 },
      };
    });
  return { nodes, edges };
}
