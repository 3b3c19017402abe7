// Deploying a definition from pasted or uploaded YAML/JSON: the server
// validates; each problem is listed and drawn beside the node or edge it names.
import { useMemo, useState } from "react";
import { Alert, App, Button, Card, Input, Space, Table, Upload } from "antd";
import { useQueryClient } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { parse as parseYaml } from "yaml";
import { api, ApiError, unwrap } from "../../api/client";
import { useShowError } from "../../components/errors";
import { Diagram, type Problem } from "./Diagram";
import { definitionKeys } from "../../api/queries/definitions";

function parseSource(text: string): unknown {
  try {
    return text.trim().startsWith("{") ? JSON.parse(text) : parseYaml(text);
  } catch {
    return null;
  }
}

export function DeployPanel({ onDeployed }: { onDeployed: (key: string, version: number) => void }) {
  const { t } = useTranslation("definitions");
  const { message } = App.useApp();
  const client = useQueryClient();
  const showError = useShowError();
  const [text, setText] = useState("");
  const [problems, setProblems] = useState<Problem[] | null>(null);
  const [busy, setBusy] = useState(false);
  const parsed = useMemo(() => parseSource(text), [text]);

  async function deploy() {
    setBusy(true);
    setProblems(null);
    try {
      const d = await unwrap(api.POST("/api/workflows/definitions", { body: { source: text } }));
      message.success(t("deploy.done", { key: d.key, version: d.version }));
      await client.invalidateQueries({ queryKey: definitionKeys.all() });
      onDeployed(d.key, d.version);
      setText("");
    } catch (e) {
      if (e instanceof ApiError && Array.isArray(e.body.problems)) setProblems(e.body.problems as Problem[]);
      else showError(e);
    } finally {
      setBusy(false);
    }
  }

  return (
    <Card size="small" title={t("deploy.title")} data-testid="deploy-panel">
      <Space direction="vertical" style={{ width: "100%" }}>
        <Input.TextArea rows={10} value={text} onChange={(e) => { setText(e.target.value); setProblems(null); }} placeholder={t("deploy.placeholder")} style={{ fontFamily: "monospace" }} data-testid="deploy-source" />
        <Space>
          <Upload accept=".yaml,.yml,.json" showUploadList={false} beforeUpload={(file) => { void file.text().then((v) => { setText(v); setProblems(null); }); return false; }}>
            <Button data-testid="deploy-upload">{t("deploy.upload")}</Button>
          </Upload>
          <Button type="primary" disabled={!text.trim()} loading={busy} onClick={deploy} data-testid="deploy-submit">{t("deploy.submit")}</Button>
        </Space>
        {problems && (
          <>
            <Alert type="error" showIcon message={t("deploy.invalid", { count: problems.length })} />
            <Table<Problem>
              data-testid="deploy-problems"
              size="small"
              rowKey={(p) => `${p.code}-${p.node}-${p.edge}-${p.field}-${p.message}`}
              pagination={false}
              dataSource={problems}
              columns={[
                { title: t("problem.where"), render: (_, p) => p.edge ? t("problem.edge", { edge: p.edge }) : p.node ? t("problem.node", { node: p.node }) : t("problem.definition") },
                { title: t("problem.field"), dataIndex: "field", render: (v: string | null) => v ?? "—" },
                { title: t("problem.code"), dataIndex: "code" },
                { title: t("problem.message"), dataIndex: "message" },
              ]}
            />
          </>
        )}
        {parsed !== null && typeof parsed === "object" && <Diagram source={parsed} problems={problems ?? []} />}
      </Space>
    </Card>
  );
}
