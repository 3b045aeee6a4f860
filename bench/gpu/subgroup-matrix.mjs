#!/usr/bin/env node
// Does Dawn offer `chromium-experimental-subgroup-matrix` (WGSL subgroup_matrix_left/right/result,
// the path to tensor cores) on this machine's adapter? Prints the adapter's matrix features and
// subgroupMatrixConfigs with Dawn's default toggles and with allow_unsafe_apis (experimental
// features are usually behind it). Run on the device machine: `bash scripts/device-run.sh features`.
// On Mesa's lavapipe (2026-12-03): no matrix feature either way, configs [].
const { create, globals } = await import("webgpu");
Object.assign(globalThis, globals);
const extraFlags = (process.env.KERNELC_DAWN_FLAGS ?? "").split(/[\s,]+/).filter(Boolean);
/**
 * Dawn's flags with allow_unsafe_apis added to the one enable-dawn-features list (two such flags do
 * not add up: the last one wins, which dropped vulkan_enable_f16_on_nvidia and with it shader-f16).
 */
const withUnsafe = (flags) => {
  const enable = flags.filter((f) => f.startsWith("enable-dawn-features=")).flatMap((f) => f.slice(21).split(","));
  return [
    ...flags.filter((f) => !f.startsWith("enable-dawn-features=")),
    `enable-dawn-features=${[...enable, "allow_unsafe_apis"].join(",")}`,
  ];
};
for (const unsafe of [false, true]) {
  const flags = ["backend=vulkan", ...(unsafe ? withUnsafe(extraFlags) : extraFlags)];
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
  // Each config's fields are getters on its prototype (JSON.stringify of the object itself gives {}).
  const configs = [...(adapter.info?.subgroupMatrixConfigs ?? [])].map((c) => ({
    componentType: c.componentType,
    resultComponentType: c.resultComponentType,
    M: c.M,
    N: c.N,
    K: c.K,
  }));
  console.log(
    JSON.stringify({ flags, adapter: adapter.info?.description, matrixFeatures: matrix, device, subgroupMatrixConfigs: configs }),
  );
}

// Where the feature is offered: for each configuration with f16 operands, one multiply-accumulate
// checked against the CPU (A: M x K, B: K x N, row-major, small integers so that f16 is exact), then
// the multiply-accumulate rate: each of 4224 one-subgroup workgroups repeats ITERS (MATRIX_ITERS,
// default 256) rounds of 4 independent multiply-accumulates on operands in registers (the tensor-core ceiling
// a prefill kernel could approach; no memory traffic). Medians of 5 timings of 3 dispatches (wall
// clock: each dispatch runs for milliseconds).
{
  const flags = ["backend=vulkan", ...withUnsafe(extraFlags)];
  const adapter = await create(flags).requestAdapter({ powerPreference: "high-performance" });
  const feature = "chromium-experimental-subgroup-matrix";
  if (!adapter?.features.has(feature) || !adapter.features.has("shader-f16")) {
    console.log(`matrix rate: not measured (${feature} or shader-f16 not offered)`);
    process.exit(0);
  }
  const device = await adapter.requestDevice({ requiredFeatures: [feature, "shader-f16", "subgroups"] });
  const configs = [...(adapter.info.subgroupMatrixConfigs ?? [])].filter(
    (c) => c.componentType === "f16" && (!process.env.MATRIX_RESULT || c.resultComponentType === process.env.MATRIX_RESULT),
  );
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const buffer = (bytes, usage) => device.createBuffer({ size: Math.max(16, bytes), usage });
  const U = GPUBufferUsage;
  for (const cfg of configs) {
    const { M, N, K } = cfg;
    const RT = cfg.resultComponentType;
    const head = `enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<${RT}>;
alias L = subgroup_matrix_left<f16, ${K}, ${M}>;
alias R = subgroup_matrix_right<f16, ${N}, ${K}>;
alias C = subgroup_matrix_result<${RT}, ${N}, ${M}>;
`;
    const label = `f16 x f16 -> ${RT}, M=${M} N=${N} K=${K}`;
    const run = async (code, wgs, aVals, bVals, outElems) => {
      const module = device.createShaderModule({ code });
      const info = await module.getCompilationInfo();
      const errs = info.messages.filter((m) => m.type === "error").map((m) => m.message);
      if (errs.length) throw new Error(errs.join("; "));
      device.pushErrorScope("validation");
      const pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
      const ab = buffer(aVals.length * 2, U.STORAGE | U.COPY_DST);
      const bb = buffer(bVals.length * 2, U.STORAGE | U.COPY_DST);
      const cb = buffer(outElems * 4, U.STORAGE | U.COPY_SRC);
      const f16 = (xs) => {
        const out = new Uint16Array(xs.length + (xs.length % 2));
        const f = new Float32Array(1);
        const u = new Uint32Array(f.buffer);
        xs.forEach((x, i) => {
          f[0] = x;
          const w = u[0];
          const e = ((w >>> 23) & 255) - 127 + 15;
          out[i] = x === 0 ? 0 : ((w >>> 16) & 0x8000) | (e << 10) | ((w >>> 13) & 0x3ff);
        });
        return out;
      };
      device.queue.writeBuffer(ab, 0, f16(aVals));
      device.queue.writeBuffer(bb, 0, f16(bVals));
      const group = device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [ab, bb, cb].map((buf, binding) => ({ binding, resource: { buffer: buf } })),
      });
      const err = await device.popErrorScope();
      if (err) throw new Error(err.message);
      const dispatch = (times) => {
        const enc = device.createCommandEncoder();
        const pass = enc.beginComputePass();
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        for (let i = 0; i < times; i++) pass.dispatchWorkgroups(wgs);
        pass.end();
        device.queue.submit([enc.finish()]);
        return device.queue.onSubmittedWorkDone();
      };
      return { cb, dispatch };
    };
    try {
      // Correctness: C = A B for one subgroup.
      const A = Array.from({ length: M * K }, (_, i) => ((i * 7) % 5) - 2);
      const B = Array.from({ length: K * N }, (_, i) => ((i * 3) % 7) - 3);
      const one = await run(
        `${head}@compute @workgroup_size(32)\nfn main() {
  let l = subgroupMatrixLoad<L>(&a, 0u, false, ${K}u);
  let r = subgroupMatrixLoad<R>(&b, 0u, false, ${N}u);
  subgroupMatrixStore(&c, 0u, subgroupMatrixMultiplyAccumulate(l, r, C()), false, ${N}u);
}\n`,
        1,
        A,
        B,
        M * N,
      );
      await one.dispatch(1);
      const rb = buffer(M * N * 4, U.MAP_READ | U.COPY_DST);
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(one.cb, 0, rb, 0, M * N * 4);
      device.queue.submit([enc.finish()]);
      await rb.mapAsync(GPUMapMode.READ);
      const raw = new Uint8Array(rb.getMappedRange().slice(0));
      rb.unmap();
      const got = RT === "f32" ? [...new Float32Array(raw.buffer)] : null;
      let bad = 0;
      if (got) {
        for (let i = 0; i < M; i++)
          for (let j = 0; j < N; j++) {
            let s = 0;
            for (let k = 0; k < K; k++) s += A[i * K + k] * B[k * N + j];
            if (got[i * N + j] !== s) bad++;
          }
      }
      const check = got ? (bad ? `WRONG in ${bad} of ${M * N} elements` : "exact") : `not checked (${RT} result)`;
      console.log(`matrix ${label}: one multiply ${check}`);
      // Rate: 4 independent accumulators per subgroup; a workgroup is one subgroup (32 lanes on
      // NVIDIA), so the store offset depends on the workgroup alone (matrix stores need uniform arguments).
      const ITERS = Number(process.env.MATRIX_ITERS ?? 256);
      const WGS = 4224;
      const rate = await run(
        `${head}@compute @workgroup_size(32)\nfn main(@builtin(workgroup_id) wid: vec3<u32>) {
  let l = subgroupMatrixLoad<L>(&a, 0u, false, ${K}u);
  let r = subgroupMatrixLoad<R>(&b, 0u, false, ${N}u);
  var c0 = C();
  var c1 = C();
  var c2 = C();
  var c3 = C();
  for (var i = 0u; i < ${ITERS}u; i++) {
    c0 = subgroupMatrixMultiplyAccumulate(l, r, c0);
    c1 = subgroupMatrixMultiplyAccumulate(l, r, c1);
    c2 = subgroupMatrixMultiplyAccumulate(l, r, c2);
    c3 = subgroupMatrixMultiplyAccumulate(l, r, c3);
  }
  let o = wid.x * ${4 * M * N}u;
  subgroupMatrixStore(&c, o, c0, false, ${N}u);
  subgroupMatrixStore(&c, o + ${M * N}u, c1, false, ${N}u);
  subgroupMatrixStore(&c, o + ${2 * M * N}u, c2, false, ${N}u);
  subgroupMatrixStore(&c, o + ${3 * M * N}u, c3, false, ${N}u);
}\n`,
        WGS,
        A.map(() => 0.001),
        B.map(() => 0.001),
        WGS * 4 * M * N,
      );
      const tFirst = performance.now();
      await rate.dispatch(1);
      console.log(`matrix ${label}: first dispatch ${(performance.now() - tFirst).toFixed(1)} ms (pipeline ready)`);
      const times = [];
      for (let r = 0; r < 5; r++) {
        const t0 = performance.now();
        await rate.dispatch(3);
        times.push((performance.now() - t0) / 3);
      }
      const ms = median(times);
      const flop = WGS * ITERS * 4 * 2 * M * N * K;
      console.log(
        `matrix ${label}: one multiply ${check}; rate ${(flop / ms / 1e9).toFixed(0)} TFLOP/s (${ms.toFixed(3)} ms per dispatch)`,
      );
    } catch (err) {
      console.log(`matrix ${label}: failed: ${err.message}`);
    }
  }
  device.destroy();
}
