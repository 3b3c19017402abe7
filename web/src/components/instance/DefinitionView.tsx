// The frozen definition snapshot of the instance, as read-only YAML.
import { useMemo } from "react";
import { Typography, theme } from "antd";
import { stringify } from "yaml";
import { useTranslation } from "react-i18next";
import type { Diagnostics } from "../../api/diagnosticsDocument";

export function DefinitionView({ doc }: { doc: Diagnostics }) {
  const { t } = useTranslation("instance");
  const { token } = theme.useToken();
  const text = useMemo(() => stringify(doc.definition.snapshot), [doc.definition.snapshot]);
  return (
    <div data-testid="view-definition">
      <Typography.Text type="secondary">{t("definition.title", { key: doc.definition.key, version: doc.definition.version, id: doc.definition.definitionId })}</Typography.Text>
      <pre data-testid="definition-yaml" style={{ background: token.colorFillQuaternary, border: `1px solid ${token.colorBorderSecondary}`, padding: 12, maxHeight: 560, overflow: "auto", fontSize: 12 }}>
        {text}
      </pre>
    </div>
  );
}
