// The workbench is served by the mnemo gateway under /workbench/; `npm run build` writes dist/ for it.
// JSX is compiled for Preact by Vite's own transformer (no plugin needed).
import { defineConfig } from "vite";

export default defineConfig({
  base: "/workbench/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, target: "es2022" },
  server: { proxy: { "/v1": "http://127.0.0.1:8080" } },
});
