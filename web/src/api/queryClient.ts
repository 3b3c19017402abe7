// The one TanStack Query client of the console, shared by the React tree and
// by the boot-time prefetch (main.tsx), so data asked for before the first
// render is the data the first render finds.
import { QueryClient, queryOptions } from "@tanstack/react-query";
import { api, ApiError, unwrap } from "./client";

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
      refetchOnWindowFocus: false,
      staleTime: 2_000,
    },
  },
});

/** The signed-in user (the layout's header). */
export const meQuery = () => queryOptions({ queryKey: ["me"], queryFn: () => unwrap(api.GET("/api/workflows/me")) });
