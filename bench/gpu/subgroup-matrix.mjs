#!/usr/bin/env node
// Does Dawn offer `chromium-experimental-subgroup-matrix` (WGSL subgroup_matrix_left/right/result,
// the path to tensor cores) on this machine's adapter? Prints the adapter's matrix features and
// subgroupMatrixConfigs with Dawn's default toggles and with allow_unsafe_apis (experimental
// features are usually behind it). Run on the device machine: `bash scripts/device-run.sh features`.
// On Mesa's lavapipe (2026-12-03): no matrix feature either way, configs [].
const { create, globals } = await import("webgpu");
Object.assign(globalThis, globals);
const extraFlags = (process.env.KERNELC_DAWN_FLAGS ?? "").split(/[\s,]+/).filter(Boolean);
for (const unsafe of [false, true]) {
  const flags = ["backend=vulkan", ...extraFlags, ...(unsafe ? ["enable-dawn-features=allow_unsafe_apis"] : [])];
  const adapter = await create(flags).requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) {
    console.log(JSON.stringify({ flags, adapter: null }));
    continue;
  }
  const matrix = [...adapter.features].filter((f) => f.includes("matrix")).sort();
  let device = "not requested";
  if (matrix.length) {
    try {
      const d = await adapter.requestDevice({ requiredFeatures: matrix });
      device = `created with ${[...d.features].filter((f) => f.includes("matrix")).join(", ")}`;
      d.destroy();
    } catch (err) {
      device = `refused: ${err.message}`;
    }
  }
  const configs = adapter.info?.subgroupMatrixConfigs ?? null;
  console.log(
    JSON.stringify({ flags, adapter: adapter.info?.description, matrixFeatures: matrix, device, subgroupMatrixConfigs: configs }),
  );
}
