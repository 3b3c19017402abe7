// 流程定义 (Process definitions): the list, a definition's versions, the
// diagram of a version, starting an instance from the generated form, and
// deploying a new definition or version; suspending / resuming every
// running instance of a definition at once (ScopeSuspend); the instances
// still running per version and migrating them to the latest (MigratePanel,
// issue 30).
import { useState } from "react";
import { App, Button, Card, Col, Descriptions, Form, Modal, Row, Select, Space } from "antd";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useTranslation } from "react-i18next";
import { api, unwrap, type Schemas } from "../../api/client";
import { ErrorAlert, useShowError } from "../../components/errors";
import { formatTime } from "../../components/format";
import { GeneratedForm, formFields, toFormData } from "../../components/GeneratedForm";
import { JsonBlock } from "../../components/JsonBlock";
import { useListState } from "../../components/useListState";
import { DeployPanel } from "./DeployPanel";
import { Diagram } from "./Diagram";
import { ScopeSuspendButtons } from "./ScopeSuspend";
import { RunningVersions } from "./MigratePanel";
import { ActionLink } from "../../components/ActionLink";
import { definitionsQuery, definitionVersionQuery, definitionVersionsQuery } from "../../api/queries/definitions";
import { PagedList } from "../../components/PagedList";
import { validated } from "../../components/validated";

type Definition = Schemas["DefinitionPublic"];

function VersionView({ defKey, version, onVersion }: { defKey: string; version: number | null; onVersion: (v: number) => void }) {
  const { t } = useTranslation("definitions");
  const { message } = App.useApp();
  const showError = useShowError();
  const [starting, setStarting] = useState(false);
  const [form] = Form.useForm();
  const versions = useQuery(definitionVersionsQuery(defKey));
  const latest = versions.data?.items.reduce((m, d) => Math.max(m, d.version), 0) ?? null;
  const shown = version ?? latest;
  const detail = useQuery({
    ...definitionVersionQuery(defKey, shown),
    enabled: !!shown,
  });
  const fields = formFields(detail.data?.source);

  async function start() {
    const values = await validated(form);
    if (!values) return;
    try {
      const instance = await unwrap(api.POST("/api/workflows/instances", { body: { definitionKey: defKey, version: shown, form: toFormData(fields, values) } }));
      message.success(t("start.done", { id: instance.id, status: t(`common:status.${instance.status}`) }));
      setStarting(false);
      form.resetFields();
    } catch (e) {
      showError(e);
    }
  }

  return (
    <>
    <Card
      size="small"
      title={t("version.title", { key: defKey })}
      data-testid="version-view"
      extra={
        <Space>
          <Select
            style={{ width: 140 }}
            value={shown ?? undefined}
            onChange={onVersion}
            data-testid="version-select" aria-label={t("version.title", { key: defKey })}
            options={(versions.data?.items ?? []).map((d) => ({ value: d.version, label: t("version.label", { version: d.version }) }))}
          />
          <Button type="primary" onClick={() => setStarting(true)} disabled={!detail.data} data-testid="start-instance">{t("start.open")}</Button>
          {detail.data && <ScopeSuspendButtons defKey={defKey} version={shown} source={detail.data.source} />}
        </Space>
      }
    >
      {versions.error ? <ErrorAlert error={versions.error} /> : null}
      {detail.error ? <ErrorAlert error={detail.error} /> : null}
      {detail.data && (
        <Space direction="vertical" style={{ width: "100%" }}>
          <Descriptions size="small" column={3}>
            <Descriptions.Item label={t("col.name")}>{detail.data.name}</Descriptions.Item>
            <Descriptions.Item label={t("col.deployedBy")}>{detail.data.deployedBy}</Descriptions.Item>
            <Descriptions.Item label={t("col.deployedAt")}>{formatTime(detail.data.deployedAt)}</Descriptions.Item>
          </Descriptions>
          <Diagram source={detail.data.source} />
          <details>
            <summary>{t("version.source")}</summary>
            <JsonBlock value={detail.data.source} />
          </details>
        </Space>
      )}
      <Modal open={starting} title={t("start.title", { key: defKey, version: shown })} onCancel={() => setStarting(false)} onOk={start} okText={t("start.submit")} cancelText={t("common:cancel")} okButtonProps={{ "data-testid": "start-submit" } as Record<string, string>} forceRender>
        {fields.length ? <GeneratedForm fields={fields} form={form} /> : <Form form={form}><p>{t("start.noFields")}</p></Form>}
      </Modal>
    </Card>
    <div style={{ marginTop: 16 }}>
      <RunningVersions defKey={defKey} latest={latest} />
    </div>
    </>
  );
}

export default function DefinitionsPage() {
  const { t } = useTranslation("definitions");
  const { params, pager, set } = useListState();
  const selected = params.get("key");
  const version = Number(params.get("version")) || null;
  const list = useQuery({
    ...definitionsQuery(pager.cursor),
    placeholderData: keepPreviousData,
  });
  // the picked definition and version are no filter: the list stays on its page
  const select = (key: string, v?: number) => set({ key, version: v });
  return (
    <div data-testid="page-definitions">
      <Row gutter={16}>
        <Col xs={24} xl={9}>
          <Card size="small" title={t("list.title")} style={{ marginBottom: 16 }}>
            <PagedList<Definition>
              testId="definitions-table"
              main
              query={list}
              pager={pager}
              table={{ rowClassName: (d) => (d.key === selected ? "ant-table-row-selected" : "") }}
              columns={[
                { title: t("col.key"), dataIndex: "key", render: (k: string) => <ActionLink onClick={() => select(k)} data-testid={`definition-${k}`}>{k}</ActionLink> },
                { title: t("col.name"), dataIndex: "name" },
                { title: t("col.version"), dataIndex: "version" },
                { title: t("col.deployedAt"), dataIndex: "deployedAt", render: formatTime },
              ]}
            />
          </Card>
        </Col>
        <Col xs={24} xl={15}>
          {selected ? <VersionView key={selected} defKey={selected} version={version} onVersion={(v) => select(selected, v)} /> : <Card size="small">{t("list.pick")}</Card>}
        </Col>
      </Row>
      <div style={{ marginTop: 16 }}>
        <DeployPanel onDeployed={(key, v) => select(key, v)} />
      </div>
    </div>
  );
}
