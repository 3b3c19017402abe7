import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The console is served by flowledger at / (same origin as /api); `npm run dev`
// proxies the API to a local `flowledger run` on port 8717.
// Routes are split by React.lazy (pages/registry.ts); the diagram library
// and ECharts load only with the pages that use them.
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    assetsDir: "assets",
    chunkSizeWarningLimit: 1500,
  },
  server: { proxy: { "/api": "http://127.0.0.1:8717" } },
});
