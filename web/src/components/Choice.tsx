// One choice among a few, shown as joined buttons (issue 33 item 4): the
// console's replacement for Ant Design's Segmented, whose markup (a
// radiogroup holding bare inputs) axe-core reports as a critical ARIA
// violation. This is a radio group (Radio.Group with button-style options):
// a native radio per option inside its label, so Tab reaches the group, the
// arrow keys move the choice, focus is visible and a screen reader reads the
// group's name (`label`) and each option.
import type { ReactNode } from "react";
import { Radio } from "antd";

export interface ChoiceOption<T extends string | number> {
  value: T;
  label: ReactNode;
}

export function Choice<T extends string | number>(props: {
  value: T | undefined;
  options: ChoiceOption<T>[];
  onChange: (value: T) => void;
  /** The group's accessible name. */
  label: string;
  size?: "small" | "middle" | "large";
  "data-testid"?: string;
}) {
  // Radio.Group passes no role to its <div>: the named radiogroup wraps it
  return (
    <span role="radiogroup" aria-label={props.label} data-testid={props["data-testid"]} style={{ display: "inline-block" }}>
      <Radio.Group optionType="button" buttonStyle="solid" size={props.size} value={props.value} onChange={(e) => props.onChange(e.target.value as T)}>
        {props.options.map((o) => (
          <Radio.Button key={String(o.value)} value={o.value}>
            {o.label}
          </Radio.Button>
        ))}
      </Radio.Group>
    </span>
  );
}
