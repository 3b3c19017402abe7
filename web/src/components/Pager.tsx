import { Button, Space, Typography } from "antd";
import { useTranslation } from "react-i18next";

export function Pager(props: {
  page: number;
  hasPrevious: boolean;
  nextCursor: string | null | undefined;
  onPrevious: () => void;
  onNext: () => void;
}) {
  const { t } = useTranslation();
  return (
    <Space style={{ marginTop: 12 }}>
      <Button disabled={!props.hasPrevious} onClick={props.onPrevious} data-testid="page-previous">
        {t("pager.previous")}
      </Button>
      <Typography.Text data-testid="page-number">{t("pager.page", { page: props.page })}</Typography.Text>
      <Button disabled={!props.nextCursor} onClick={props.onNext} data-testid="page-next">
        {t("pager.next")}
      </Button>
    </Space>
  );
}
