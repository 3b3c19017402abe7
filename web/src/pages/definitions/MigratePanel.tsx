// 版本迁移 (issue 30): a definition's running instances per version (oldest
// first) and, for an older version, "migrate to …": the node mapping (drafted
// by the server: same key, same type; every source node editable), the exact
// dry run per instance with a filter by verdict, then the run and its outcome.
import { useState } from "react";
import { Alert, App, Button, Card, Input, Modal, Segmented, Select, Space, Table, Tag, Typography } from "antd";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { ErrorAlert, useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { definitionKeys, definitionVersionQuery, definitionVersionsQuery, runningVersionsQuery } from "../../api/queries/definitions";

type Preview = Schemas["MigrationPreviewPublic"];
type Result = Schemas["InstanceResultPublic"];
type Done = Schemas["MigrationPublic"];
type Verdict = "ok" | "changed" | "blocked";

const VERDICT_COLOR: Record<Verdict, string> = { ok: "green", changed: "blue", blocked: "red" };

interface SourceNode { key: string; type: string }

function nodesOf(source: unknown): SourceNode[] {
  const nodes = (source as { nodes?: SourceNode[] } | undefined)?.nodes ?? [];
  return nodes.map((n) => ({ key: n.key, type: n.type }));
}

function What({ r }: { r: Result }) {
  const { t } = useTranslation("definitions");
  if (r.reasons.length) {
    return <span>{r.reasons.map((x) => t(`migrate.reason.${String(x.code)}`, { defaultValue: String(x.code) }) + (x.nodeKey ? ` (${String(x.nodeKey)})` : x.field ? ` (${String(x.field)})` : "") + (x.rule ? ` [${String(x.rule)}]` : "")).join("; ")}</span>;
  }
  return (
    <span>
      {r.changes.map((c, i) => {
        const kind = String(c.kind);
        let detail = "";
        if (kind === "node_renamed") detail = (c.nodes as { from: string; to: string }[]).map((n) => `${n.from} → ${n.to}`).join(", ");
        if (kind === "assignee") detail = `${String(c.nodeKey)}: +${(c.added as string[]).join(",")} -${(c.removed as string[]).join(",")}`;
        if (kind === "form_fields_added") detail = (c.fields as string[]).join(", ");
        if (kind === "timeout") detail = `${String(c.nodeKey)}: +${String(c.added)} -${String(c.canceled)}`;
        return <div key={i}>{t(`migrate.change.${kind}`)}: {detail}</div>;
      })}
    </span>
  );
}

function useVersion(defKey: string, version: number) {
  return useQuery(definitionVersionQuery(defKey, version));
}

export function MigrateDialog({ defKey, from, to, instanceIds, onClose }: { defKey: string; from: number; to: number; instanceIds?: number[]; onClose: () => void }) {
  const { t } = useTranslation("definitions");
  const { message } = App.useApp();
  const showError = useShowError();
  const client = useQueryClient();
  const [mapping, setMapping] = useState<Record<string, string>>({});
  const [reason, setReason] = useState("");
  const [verdict, setVerdict] = useState<Verdict | "all">("all");
  const [preview, setPreview] = useState<Preview | null>(null);
  const [done, setDone] = useState<Done | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const source = useVersion(defKey, from);
  const target = useVersion(defKey, to);
  const targetNodes = nodesOf(target.data?.source);
  const body = () => ({ definitionKey: defKey, fromVersions: [from], toVersion: to, mapping, reason, ...(instanceIds?.length ? { instanceIds } : {}) });

  async function dryRun() {
    setBusy(true);
    setError(null);
    try {
      const found = await unwrap(api.POST("/api/workflows/migrations/preview", { body: { ...body(), limit: 500, offset: 0 } }));
      setPreview(found);
      setMapping(found.mapping);
      setDone(null);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }

  async function run() {
    setBusy(true);
    try {
      const result = await unwrap(api.POST("/api/workflows/migrations", { body: body() }));
      setDone(result);
      message.success(t("migrate.done", { id: result.id, migrated: result.progress.byOutcome.migrated ?? 0 }));
      await client.invalidateQueries({ queryKey: definitionKeys.running(defKey) });
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
    }
  }

  const outcomes = new Map((done?.items ?? []).map((i) => [i.instanceId, i.outcome]));
  const rows = (preview?.instances ?? []).filter((r) => verdict === "all" || r.verdict === verdict);
  return (
    <Modal open width={1000} title={t("migrate.title", { key: defKey, from, to })} onCancel={onClose} footer={null} data-testid="migrate-dialog">
      <Space direction="vertical" style={{ width: "100%" }}>
        <Typography.Text strong>{t("migrate.mapping")}</Typography.Text>
        <Table<SourceNode>
          size="small"
          rowKey="key"
          pagination={false}
          data-testid="migrate-mapping"
          dataSource={nodesOf(source.data?.source)}
          columns={[
            { title: t("migrate.sourceNode", { version: from }), render: (_, n) => `${n.key} (${n.type})` },
            {
              title: t("migrate.targetNode", { version: to }),
              render: (_, n) => (
                <Select
                  allowClear
                  style={{ width: 240 }}
                  aria-label={t("migrate.targetFor", { node: n.key })}
                  data-testid={`map-${n.key}`}
                  value={mapping[n.key]}
                  placeholder={t("migrate.unmapped")}
                  onChange={(v: string | undefined) => {
                    const next = { ...mapping };
                    if (v) next[n.key] = v;
                    else delete next[n.key];
                    setMapping(next);
                  }}
                  options={targetNodes.map((x) => ({ value: x.key, label: `${x.key} (${x.type})` }))}
                />
              ),
            },
          ]}
        />
        <Input.TextArea rows={2} value={reason} onChange={(e) => setReason(e.target.value)} placeholder={t("migrate.reason.placeholder")} aria-label={t("migrate.reason.label")} data-testid="migrate-reason" />
        <Space>
          <Button onClick={dryRun} loading={busy} data-testid="migrate-dry-run">{t("migrate.dryRun")}</Button>
          <Button type="primary" danger onClick={run} loading={busy} disabled={!preview || !reason.trim()} data-testid="migrate-run">{t("migrate.run")}</Button>
        </Space>
        {error ? <ErrorAlert error={error} /> : null}
        {preview && (
          <>
            <Alert
              type={preview.counts.blocked ? "warning" : "info"}
              data-testid="migrate-counts"
              message={t("migrate.counts", { total: preview.total, ok: preview.counts.ok, changed: preview.counts.changed, blocked: preview.counts.blocked })}
            />
            <Segmented
              value={verdict}
              onChange={(v) => setVerdict(v as Verdict | "all")}
              options={(["all", "ok", "changed", "blocked"] as const).map((v) => ({ value: v, label: t(`migrate.verdict.${v}`) }))}
            />
            <Table<Result>
              size="small"
              rowKey="instanceId"
              data-testid="migrate-results"
              pagination={{ pageSize: 20 }}
              dataSource={rows}
              columns={[
                { title: t("migrate.col.instance"), dataIndex: "instanceId" },
                { title: t("migrate.col.verdict"), dataIndex: "verdict", render: (v: Verdict) => <Tag color={VERDICT_COLOR[v]}>{t(`migrate.verdict.${v}`)}</Tag> },
                { title: t("migrate.col.at"), render: (_, r) => [...new Set(r.tokens.map((x) => String(x.nodeKey)))].join(", ") },
                { title: t("migrate.col.what"), render: (_, r) => <What r={r} /> },
                { title: t("migrate.col.outcome"), render: (_, r) => (outcomes.has(r.instanceId) ? t(`migrate.outcome.${outcomes.get(r.instanceId)}`) : "") },
              ]}
            />
          </>
        )}
      </Space>
    </Modal>
  );
}

/** The instances list's batch action: the selected instances (one
 * definition and version) to the definition's latest version. */
export function MigrateSelected({ defKey, from, instanceIds, onClose }: { defKey: string; from: number; instanceIds: number[]; onClose: () => void }) {
  const { t } = useTranslation("definitions");
  const versions = useQuery(definitionVersionsQuery(defKey));
  const latest = versions.data?.items.reduce((m, d) => Math.max(m, d.version), 0) ?? null;
  if (latest && latest > from) return <MigrateDialog defKey={defKey} from={from} to={latest} instanceIds={instanceIds} onClose={onClose} />;
  return (
    <Modal open title={t("migrate.selectedTitle", { key: defKey })} onCancel={onClose} footer={null}>
      {versions.error ? <ErrorAlert error={versions.error} /> : latest ? <Alert type="info" message={t("migrate.onLatest", { version: latest })} /> : null}
    </Modal>
  );
}

export function RunningVersions({ defKey, latest }: { defKey: string; latest: number | null }) {
  const { t } = useTranslation("definitions");
  const [from, setFrom] = useState<number | null>(null);
  const running = useQuery(runningVersionsQuery(defKey));
  type Row = Schemas["RunningVersion"];
  return (
    <Card size="small" title={t("migrate.running.title")} data-testid="running-versions">
      {running.error ? <ErrorAlert error={running.error} /> : null}
      <Table<Row>
        size="small"
        rowKey="version"
        pagination={false}
        dataSource={running.data?.versions ?? []}
        locale={{ emptyText: t("migrate.running.none") }}
        columns={[
          { title: t("migrate.running.version"), dataIndex: "version", render: (v: number) => t("version.label", { version: v }) },
          { title: t("migrate.running.count"), dataIndex: "running" },
          { title: t("migrate.running.suspended"), dataIndex: "suspended" },
          { title: t("migrate.running.oldest"), dataIndex: "oldestStartedAt", render: formatTime },
          {
            title: "",
            render: (_, r) =>
              latest && r.version < latest ? (
                <Button size="small" onClick={() => setFrom(r.version)} data-testid={`migrate-from-${r.version}`}>
                  {t("migrate.open", { version: latest })}
                </Button>
              ) : null,
          },
        ]}
      />
      {from && latest ? <MigrateDialog defKey={defKey} from={from} to={latest} onClose={() => setFrom(null)} /> : null}
    </Card>
  );
}
