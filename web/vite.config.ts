import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The console is served by flowledger at / (same origin as /api); `npm run dev`
// proxies the API to a local `flowledger run` on port 8717.
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    assetsDir: "assets",
    chunkSizeWarningLimit: 1500,
    rollupOptions: {
      output: {
        manualChunks(id) {
          if (id.includes("node_modules/echarts") || id.includes("node_modules/zrender")) return "echarts";
          if (id.includes("node_modules/@xyflow") || id.includes("node_modules/@dagrejs")) return "flow";
          return undefined;
        },
      },
    },
  },
  server: { proxy: { "/api": "http://127.0.0.1:8717" } },
});
