// Estimated analytics figures (issue 34 item 3): a figure a panel names in
// `estimated` (computed over a sample of the table, because reading every
// row of the period would cost too much) or a status in `estimatedStatuses`
// (the planner's estimate) reads "≈ n" — never shown as exact.
export function approx(estimated: string[] | undefined, field: string, text: string): string {
  return estimated?.includes(field) ? `≈ ${text}` : text;
}
