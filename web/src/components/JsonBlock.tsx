import { Typography } from "antd";
import { formatJson } from "./format";

export function JsonBlock({ value, testId }: { value: unknown; testId?: string }) {
  return (
    <Typography.Paragraph data-testid={testId} style={{ marginBottom: 0 }}>
      <pre style={{ maxHeight: 260, overflow: "auto", margin: 0, fontSize: 12 }}>{formatJson(value)}</pre>
    </Typography.Paragraph>
  );
}
