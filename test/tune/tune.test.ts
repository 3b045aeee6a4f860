/**
 * `kernelc tune` on the software GPU (lavapipe): a tiny candidate set of the Axpby fixture (WG 64
 * or 256) timed on two call shapes, the tune file it writes, `build` reading it as pins (the
 * config's pins taking precedence), `explain` showing the choice, the measurement cache, and the
 * errors for a bad tune file and a bad call.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main, type Io } from "../../src/cli/main.js";
import { getGpuDevice } from "../support/gpu.js";

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/axpby");
const PROFILE = "mobile-1024-f16";

// Points the Vulkan loader at lavapipe (or fails under CI=true when there is no adapter).
const device = await getGpuDevice({ requiredFeatures: ["shader-f16", "timestamp-query"] });
device?.destroy();

function tuneConfig(extra: Record<string, unknown> = {}): string {
  return JSON.stringify(
    {
      profiles: [PROFILE, "core"],
      tune: {
        Axpby: {
          calls: [
            {
              name: "n64k-f32",
              inputs: { xT: { shape: [65536], dtype: "float32" } },
              outputs: { yT: { shape: [65536], dtype: "float32" } },
              attrs: { alpha: 2, beta: 0.5 },
            },
            { name: "n4k-f16", inputs: { xT: { shape: [4096], dtype: "float16" } }, outputs: { yT: { shape: [4096], dtype: "float16" } } },
          ],
          tunables: { WG: [64, 256] },
        },
      },
      ...extra,
    },
    null,
    2,
  );
}

async function run(cwd: string, ...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const io: Io = { stdout: (s) => void (stdout += s), stderr: (s) => void (stderr += s), cwd, isTTY: false, env: {} };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

describe.runIf(device)("kernelc tune (lavapipe)", () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-tune-"));
    fs.cpSync(path.join(FIXTURE, "specs"), path.join(dir, "specs"), { recursive: true });
    fs.cpSync(path.join(FIXTURE, "templates"), path.join(dir, "templates"), { recursive: true });
    // This copy serves float16 only where the profile has shader-f16 (a kernel may say so in its
    // `when`), so core cannot serve the float16 call.
    const specFile = path.join(dir, "specs/Axpby.json");
    const spec = JSON.parse(fs.readFileSync(specFile, "utf8")) as { when: string[] };
    spec.when.push('dtypes.T == "f32" or has(device.features, "shader-f16")');
    fs.writeFileSync(specFile, JSON.stringify(spec, null, 2));
    fs.writeFileSync(path.join(dir, "kernelc.config.json"), tuneConfig());
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("times every candidate on every call and writes the winner with its provenance", async () => {
    const r = await run(dir, "tune", "--profile", PROFILE, "--repeats", "3");
    expect(r.stderr).not.toMatch(/error/);
    expect(r.code).toBe(0);
    const tune = JSON.parse(fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8"));
    const rec = tune.profiles[PROFILE].Axpby;
    expect([64, 256]).toContain(rec.pins.WG);
    expect(rec.measured.candidates).toBe(2);
    expect(rec.measured.calls).toEqual(["n64k-f32", "n4k-f16"]);
    expect(rec.measured.adapter.vendor).toBe("mesa");
    expect(rec.measured.timer).toBe("timestamp-query");
    expect(rec.measured.winner.pins).toEqual(rec.pins);
    expect(rec.measured.runnerUp.pins.WG).not.toBe(rec.pins.WG);
    expect(rec.measured.winner.ms).toHaveLength(2);
    for (const ms of [...rec.measured.winner.ms, ...rec.measured.runnerUp.ms]) expect(ms).toBeGreaterThan(0);
    expect(rec.measured.runnerUp.score).toBeGreaterThanOrEqual(rec.measured.winner.score);
    expect(rec.measured.margin).toBeGreaterThanOrEqual(1);
    expect(r.stdout).toContain(`${PROFILE} Axpby: WG=${rec.pins.WG}`);
  });

  it("leaves out a call the profile cannot serve, with a warning, and keeps other profiles' records", async () => {
    const r = await run(dir, "tune", "--profile", "core", "--repeats", "2");
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/warning: core Axpby: call `n4k-f16` left out/);
    const tune = JSON.parse(fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8"));
    expect(tune.profiles.core.Axpby.measured.calls).toEqual(["n64k-f32"]);
    expect(tune.profiles[PROFILE].Axpby.measured.calls).toEqual(["n64k-f32", "n4k-f16"]);
  });

  it("measures nothing again when nothing changed (the cache answers)", async () => {
    const cache = path.join(dir, ".kernelc-cache/tune.json");
    const before = fs.readFileSync(cache, "utf8");
    const tuneBefore = JSON.parse(fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8"));
    fs.utimesSync(cache, new Date(0), new Date(0));
    const r = await run(dir, "tune", "--profile", PROFILE, "--repeats", "3");
    expect(r.code).toBe(0);
    expect(fs.statSync(cache).mtimeMs).toBe(0);
    expect(fs.readFileSync(cache, "utf8")).toBe(before);
    const tuneAfter = JSON.parse(fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8"));
    expect(tuneAfter.profiles[PROFILE].Axpby.measured.winner).toEqual(tuneBefore.profiles[PROFILE].Axpby.measured.winner);
  });

  it("signs its measurement cache like the other caches, and reads no cache it did not sign (committed, forged, edited)", async () => {
    const cache = path.join(dir, ".kernelc-cache/tune.json");
    const signed = fs.readFileSync(cache, "utf8");
    expect(signed).toMatch(/^\{"mac":"[0-9a-f]{64}","data":\{/);
    const parsed = JSON.parse(signed) as { data?: { measurements: Record<string, number> }; measurements?: Record<string, number> };
    const keys = Object.keys((parsed.data ?? parsed).measurements!);
    expect(keys.length).toBeGreaterThan(0);
    // Every candidate "measured" at 4242 ms (4 digits, as the tune file keeps them): a run that read these would report that time.
    const forged = Object.fromEntries(keys.map((k) => [k, 4242]));
    const unsigned = JSON.stringify({ generatedBy: "kernelc tune; a cache, safe to delete", measurements: forged });
    const tampered = signed.replace(
      /"data":.*$/s,
      `"data":${JSON.stringify({ generatedBy: "kernelc tune; a cache, safe to delete", measurements: forged })}}`,
    );
    for (const text of [unsigned, tampered]) {
      fs.writeFileSync(cache, text);
      // The same repeats as the run that wrote the cache: its keys would answer this run.
      const r = await run(dir, "tune", "--profile", PROFILE, "--repeats", "3");
      expect(r.code).toBe(0);
      const tune = JSON.parse(fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8"));
      expect(tune.profiles[PROFILE].Axpby.measured.winner.ms).not.toContain(4242);
      const rewritten = fs.readFileSync(cache, "utf8");
      expect(rewritten).toMatch(/^\{"mac":"[0-9a-f]{64}","data":\{/);
      expect(Object.values((JSON.parse(rewritten) as { data: { measurements: Record<string, number> } }).data.measurements)).not.toContain(
        4242,
      );
    }
  });

  it("builds with the tuned pins, deterministically, and explain shows the choice", async () => {
    const tune = JSON.parse(fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8"));
    const wg = tune.profiles[PROFILE].Axpby.pins.WG;
    expect((await run(dir, "build")).code).toBe(0);
    const described = JSON.parse(fs.readFileSync(path.join(dir, "out", PROFILE, "kernels.json"), "utf8"));
    const tunables = described.kernels.Axpby.variants.map((v: { tunables: { WG: number } }) => v.tunables.WG);
    expect(new Set(tunables)).toEqual(new Set([wg]));
    const first = fs.readFileSync(path.join(dir, "out", PROFILE, "dispatcher.ts"), "utf8");
    expect((await run(dir, "build", "--force")).code).toBe(0);
    expect(fs.readFileSync(path.join(dir, "out", PROFILE, "dispatcher.ts"), "utf8")).toBe(first);
    const explain = await run(dir, "explain", "Axpby", "--profile", PROFILE);
    expect(explain.code).toBe(0);
    expect(explain.stdout).toMatch(new RegExp(`tuned \\(kernelc.tune.json\\): WG=${wg}, measured \\d{4}-\\d\\d-\\d\\d on llvmpipe`));
    expect(explain.stdout).toMatch(/runner-up: WG=\d+ at [\d.]+ ms \([\d.]+% slower\)/);
  });

  it("lets the config's pins take precedence over the tuned ones, and says so", async () => {
    const tune = JSON.parse(fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8"));
    const other = tune.profiles[PROFILE].Axpby.pins.WG === 64 ? 256 : 64;
    fs.writeFileSync(path.join(dir, "kernelc.config.json"), tuneConfig({ tunables: { [PROFILE]: { Axpby: { WG: other } } } }));
    try {
      expect((await run(dir, "build")).code).toBe(0);
      const described = JSON.parse(fs.readFileSync(path.join(dir, "out", PROFILE, "kernels.json"), "utf8"));
      expect(new Set(described.kernels.Axpby.variants.map((v: { tunables: { WG: number } }) => v.tunables.WG))).toEqual(new Set([other]));
      const explain = await run(dir, "explain", "Axpby", "--profile", PROFILE);
      expect(explain.stdout).toContain(`WG: the config pins ${other}, which takes precedence over the tuned`);
    } finally {
      fs.writeFileSync(path.join(dir, "kernelc.config.json"), tuneConfig());
    }
  });

  it("rejects a call its kernel cannot take", async () => {
    const bad = JSON.parse(tuneConfig());
    bad.tune.Axpby.calls = [{ name: "wrong", inputs: { xT: { shape: [16, 16], dtype: "float32" } } }];
    fs.writeFileSync(path.join(dir, "kernelc.config.json"), JSON.stringify(bad));
    try {
      const r = await run(dir, "tune", "--profile", PROFILE, "--repeats", "1");
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/error\[tune_call_invalid\]: tune call `wrong` of Axpby cannot be planned on mobile-1024-f16/);
    } finally {
      fs.writeFileSync(path.join(dir, "kernelc.config.json"), tuneConfig());
    }
  });

  it("times a call that leaves out an output the spec gives a shape (planned from its computed shape)", async () => {
    // Axpby's yT has `"shape": "shapes.xT"`, so a call may leave it out; the tuner then allocates
    // it from the plans' byte ranges (it crashed with an internal error: no buffer for `yT`).
    const config = JSON.parse(tuneConfig());
    config.tune.Axpby.calls = [{ name: "no-output", inputs: { xT: { shape: [1001], dtype: "float32" } }, attrs: { alpha: 3 } }];
    fs.writeFileSync(path.join(dir, "kernelc.config.json"), JSON.stringify(config));
    const tuneFile = path.join(dir, "kernelc.tune.json");
    const tuneBefore = fs.existsSync(tuneFile) ? fs.readFileSync(tuneFile, "utf8") : undefined;
    try {
      const r = await run(dir, "tune", "--profile", PROFILE, "--repeats", "1");
      expect(r.stderr).not.toMatch(/error|internal/);
      expect(r.code).toBe(0);
      const tune = JSON.parse(fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8"));
      expect(tune.profiles[PROFILE].Axpby.measured.calls).toEqual(["no-output"]);
      for (const ms of tune.profiles[PROFILE].Axpby.measured.winner.ms) expect(ms).toBeGreaterThan(0);
    } finally {
      fs.writeFileSync(path.join(dir, "kernelc.config.json"), tuneConfig());
      if (tuneBefore === undefined) fs.rmSync(tuneFile, { force: true });
      else fs.writeFileSync(tuneFile, tuneBefore);
    }
  });

  it("refuses a per-call key (`by`) over tunables that shape the shader, before measuring", async () => {
    const config = JSON.parse(tuneConfig()) as { tune: { Axpby: Record<string, unknown> } };
    config.tune.Axpby.by = "n";
    fs.writeFileSync(path.join(dir, "kernelc.config.json"), JSON.stringify(config));
    const before = fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8");
    try {
      const r = await run(dir, "tune", "--profile", PROFILE);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/error\[tune_rule_invalid\]: tune.Axpby.by: WG shapes the shader of pass main/);
      expect(fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8")).toBe(before);
    } finally {
      fs.writeFileSync(path.join(dir, "kernelc.config.json"), tuneConfig());
    }
  });

  it("with a per-call key, chooses a shader-shaping tunable once and rules the others per call", async () => {
    // A tunable that reaches no shader text: OVER multiplies the workgroups dispatched (the extra
    // ones find nothing to do), so it may change per call; WG shapes the shader.
    const specFile = path.join(dir, "specs/Axpby.json");
    const specBefore = fs.readFileSync(specFile, "utf8");
    const tuneBefore = fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8");
    const spec = JSON.parse(specBefore) as {
      tunables: Record<string, unknown>;
      derive: Record<string, string>;
      variants: { passes: { dispatch: { x: string } }[] }[];
    };
    spec.tunables.OVER = { default: 1 };
    spec.derive.dispatchFits = "groups * tunables.OVER <= min(device.limits.maxComputeWorkgroupsPerDimension, 65535)";
    for (const v of spec.variants) for (const p of v.passes) p.dispatch.x = "groups * tunables.OVER";
    fs.writeFileSync(specFile, JSON.stringify(spec, null, 2));
    const config = JSON.parse(tuneConfig()) as { tune: { Axpby: Record<string, unknown> } };
    config.tune.Axpby.by = "n";
    config.tune.Axpby.tunables = { WG: [64, 256], OVER: [1, 2] };
    fs.writeFileSync(path.join(dir, "kernelc.config.json"), JSON.stringify(config));
    try {
      const r = await run(dir, "tune", "--profile", PROFILE);
      expect(r.stderr).not.toMatch(/error\[/);
      expect(r.code).toBe(0);
      const tune = JSON.parse(fs.readFileSync(path.join(dir, "kernelc.tune.json"), "utf8")) as {
        profiles: Record<
          string,
          {
            Axpby: {
              pins: Record<string, number>;
              perCall?: { cases: { pins: Record<string, number> }[] };
              measured: { table: { pins: Record<string, number>; ms: number[] }[] };
            };
          }
        >;
      };
      const rec = tune.profiles[PROFILE]!.Axpby;
      expect(rec.measured.table).toHaveLength(4);
      expect([64, 256]).toContain(rec.pins.WG);
      expect([1, 2]).toContain(rec.pins.OVER);
      // The rule (when the calls' timings call for one) sets OVER only; WG comes from the pins.
      for (const c of rec.perCall?.cases ?? []) expect(Object.keys(c.pins)).toEqual(["OVER"]);
      const b = await run(dir, "build");
      expect(b.stderr).not.toMatch(/error\[|warning\[/);
      expect(b.code).toBe(0);
      const e = await run(dir, "explain", "Axpby", "--profile", PROFILE);
      expect(e.code).toBe(0);
      expect(e.stdout).toContain(`tuned (kernelc.tune.json): `);
      expect(e.stdout).toContain(`WG=${rec.pins.WG}`);
    } finally {
      fs.writeFileSync(specFile, specBefore);
      fs.writeFileSync(path.join(dir, "kernelc.config.json"), tuneConfig());
      fs.writeFileSync(path.join(dir, "kernelc.tune.json"), tuneBefore);
    }
  });

  it("refuses to build from a tune file it did not write", async () => {
    const file = path.join(dir, "kernelc.tune.json");
    const good = fs.readFileSync(file, "utf8");
    fs.writeFileSync(file, JSON.stringify({ profiles: { [PROFILE]: { Axpby: { pins: { WG: "fast" } } } } }));
    try {
      const r = await run(dir, "build");
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/error\[tune_file_invalid\]: kernelc.tune.json at \//);
      expect(r.stderr).toContain("re-run it, or restore the file from version control");
    } finally {
      fs.writeFileSync(file, good);
    }
  });
});
