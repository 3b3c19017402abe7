// The `?` dialog: every keyboard shortcut of the console (issue 33 item 4),
// a titled modal (its title names the dialog for screen readers).
import { Button, Modal } from "antd";
import { useTranslation } from "react-i18next";
import { GO_TO, HELP, SHORTCUTS } from "./shortcutKeys";

export function ShortcutsHelp({ onClose }: { onClose: () => void }) {
  const { t } = useTranslation("shortcuts");
  const { t: tc } = useTranslation();
  const row = (key: string, keys: string[], text: string) => (
    <tr key={key}>
      <td style={{ paddingRight: 16, whiteSpace: "nowrap" }}>
        {keys.map((k, i) => (
          <kbd key={i} style={{ marginRight: 4 }}>
            {k}
          </kbd>
        ))}
      </td>
      <td>{text}</td>
    </tr>
  );
  return (
    <Modal
      open
      title={t("title")}
      width={520}
      onCancel={onClose}
      footer={
        <Button type="primary" onClick={onClose} autoFocus>
          {t("close")}
        </Button>
      }
    >
      <table data-testid="shortcuts-help">
        <tbody>
          {SHORTCUTS.map((key) => row(key, [key], t(`key.${HELP[key]}`)))}
          {Object.entries(GO_TO).map(([letter, page]) => row(`g${letter}`, ["g", letter], t("key.goTo", { page: tc(`nav.${page}`) })))}
        </tbody>
      </table>
    </Modal>
  );
}
