import { defineConfig } from "vite";
import kernelc from "kernelc/vite";

// The kernelc plugin builds out/ (shaders, dispatchers, manifests, index.ts) from kernelc.config.json
// when Vite starts, and again whenever a spec, a template or the config changes.
export default defineConfig({
  plugins: [kernelc()],
  build: { target: "es2022" },
});
