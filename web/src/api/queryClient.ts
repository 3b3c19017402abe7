// The one TanStack Query client of the console, shared by the React tree and
// by the boot-time prefetch (main.tsx), so data asked for before the first
// render is the data the first render finds.
import { QueryClient } from "@tanstack/react-query";
import { ApiError } from "./client";

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
      refetchOnWindowFocus: false,
      staleTime: 2_000,
    },
  },
});
