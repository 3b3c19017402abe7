// Export of the current filter (GET /instances/export?format=csv|xlsx): the
// dialog says how many instances match and that at most 10,000 rows are
// written, before anything is downloaded (with the session's token).
import { useState } from "react";
import { Alert, Modal, Radio, Space, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { download } from "../../api/client";
import { useShowError } from "../../components/errors";
import { formatNumber } from "../../components/units";
import { toSearch, type InstanceQuery } from "./filters";

export const EXPORT_CAP = 10_000;

export function ExportDialog(props: { query: InstanceQuery; total: number | undefined; filterText: string; onClose: () => void }) {
  const { t } = useTranslation("instances");
  const showError = useShowError();
  const [format, setFormat] = useState<"csv" | "xlsx">("csv");
  const [busy, setBusy] = useState(false);
  const total = props.total ?? 0;

  async function run() {
    setBusy(true);
    try {
      await download(`/api/workflows/instances/export?${toSearch(props.query, { format })}`, `instances.${format}`);
      props.onClose();
    } catch (error) {
      showError(error);
    } finally {
      setBusy(false);
    }
  }

  return (
    <Modal
      open
      title={t("export.title")}
      onCancel={props.onClose}
      onOk={() => void run()}
      okText={t("export.download")}
      okButtonProps={{ loading: busy, disabled: total === 0, "data-testid": "export-ok" }}
    >
      <Space direction="vertical" style={{ width: "100%" }}>
        <Typography.Text data-testid="export-total" data-count={total}>
          {t("export.matching", { total: formatNumber(total) })}
        </Typography.Text>
        <Typography.Text type="secondary">{t("export.filter", { filter: props.filterText })}</Typography.Text>
        <Alert
          type={total > EXPORT_CAP ? "warning" : "info"}
          showIcon
          data-testid="export-cap"
          message={total > EXPORT_CAP ? t("export.truncated", { cap: formatNumber(EXPORT_CAP), total: formatNumber(total) }) : t("export.cap", { cap: formatNumber(EXPORT_CAP) })}
        />
        <Radio.Group value={format} onChange={(e) => setFormat(e.target.value as "csv" | "xlsx")} data-testid="export-format">
          <Radio value="csv" data-testid="export-csv">
            CSV
          </Radio>
          <Radio value="xlsx" data-testid="export-xlsx">
            XLSX
          </Radio>
        </Radio.Group>
      </Space>
    </Modal>
  );
}
