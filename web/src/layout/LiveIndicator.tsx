// The header's connection indicator (issue 33 item 2): live (pages update
// when something changes), reconnecting, or polling (pages refresh on their
// own timer), with a tooltip saying what it means.
import { Badge, Tooltip } from "antd";
import { useTranslation } from "react-i18next";
import { useLive } from "../live/context";

const BADGE = { live: "success", reconnecting: "processing", polling: "default" } as const;

export function LiveIndicator() {
  const { t } = useTranslation();
  const { status } = useLive();
  return (
    <Tooltip title={t(`live.${status}Hint`)}>
      <span data-testid="live-indicator" data-status={status} role="status" tabIndex={0}>
        <Badge status={BADGE[status]} text={t(`live.${status}`)} />
      </span>
    </Tooltip>
  );
}
