// An action written as a link (issue 33 item 4): "#12", "Edit", "Hits"… in
// a table cell. A bare <a onClick> has no href, so Tab skips it and Enter
// does nothing; this is a real <button> styled as a link (Ant Design's
// link button without padding), reachable with Tab, pressed with Enter or
// Space, with the focus ring of every button. Other props (a Popconfirm's
// cloned onClick, aria-*, data-*) pass through to the button.
import { forwardRef, type ComponentProps } from "react";
import { Button } from "antd";

type Props = Omit<ComponentProps<typeof Button>, "type" | "size">;

export const ActionLink = forwardRef<HTMLButtonElement, Props>(function ActionLink({ style, ...rest }, ref) {
  return <Button ref={ref} type="link" size="small" style={{ padding: 0, height: "auto", ...style }} {...rest} />;
});
