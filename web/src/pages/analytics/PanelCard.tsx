// The frame of one analytics panel: its title, a spinner on first load and
// the API error (message and field) in place of the figures.
import type { ReactNode } from "react";
import { Card, Spin } from "antd";
import { ErrorAlert } from "../../components/errors";

export function PanelCard(props: { title: ReactNode; testId: string; loading: boolean; error: unknown; extra?: ReactNode; children: ReactNode }) {
  return (
    <Card size="small" title={props.title} extra={props.extra} data-testid={props.testId} style={{ height: "100%" }}>
      {props.error ? <ErrorAlert error={props.error} /> : props.loading ? <Spin /> : props.children}
    </Card>
  );
}
