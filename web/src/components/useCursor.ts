// Keyset paging kept in memory, for what is no list page (the instance
// drawer's trace): the API returns `next`; we keep the cursors of the pages
// seen so "previous" goes back without offsets. A new filter (resetKey)
// starts again from the first page. Lists use components/useListState.
import { useState } from "react";

export function useCursor(resetKey: string) {
  const [state, setState] = useState<{ key: string; stack: (string | null)[] }>({
    key: resetKey,
    stack: [null],
  });
  const stack = state.key === resetKey ? state.stack : [null];
  return {
    cursor: stack[stack.length - 1],
    page: stack.length,
    hasPrevious: stack.length > 1,
    next: (value: string | null | undefined) => {
      if (value) setState({ key: resetKey, stack: [...stack, value] });
    },
    previous: () => {
      if (stack.length > 1) setState({ key: resetKey, stack: stack.slice(0, -1) });
    },
  };
}
