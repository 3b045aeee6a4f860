/**
 * The seed kernels in a real browser: Debian's Chromium (scripts/setup-chromium.sh) with WebGPU on
 * SwiftShader, driven by playwright-core.
 *
 * The page is examples/vite-app built by Vite with the kernelc plugin (which builds the repository's
 * specs and templates into the app's out/), plus the harness test/browser/page/harness.ts as a
 * second module script. It is served from 127.0.0.1. In the page the runtime picks the profile for
 * the browser's adapter (chooseProfile, loadBundle); SwiftShader has no shader-f16 and 256
 * invocations per workgroup, so the pick is mobile-256, whose attention variants store f16
 * tensors as packed u32 pairs. The example's own PagedAttention decode check runs, then the
 * harness runs PagedAttention (a decode batch, and a mixed prefill/decode batch) and
 * SparseAttention (decode and prompt) on tensors made here with the case generators the lavapipe
 * tests use (test/support): peaked softmax, every cache slot that no visible key reads holding
 * NaN, infinities or huge values, outputs and scratch poisoned before each run. Outputs must match
 * the CPU references (src/reference) within atol = rtol = 5e-3; caches must hold exactly the
 * reference's f16 bits.
 *
 * Skips (with a message) when Chromium or its WebGPU adapter is missing, unless CI=true: then it fails.
 * Run alone: npx vitest run test/browser (BROWSER_SEED=<n> replays a seed).
 */
import { afterAll, describe, expect, test } from "vitest";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { Call } from "../../src/model/plan.js";
import { f16ToF32, f32ToF16 } from "../../src/runtime/f16.js";
import { browserUnavailable, CHROMIUM, CHROMIUM_FLAGS, launchChromium, serve, type TestServer } from "../support/browser.js";
import { POISON_U32, SCRATCH_POISON_WORDS } from "../support/gpu.js";
import { ATTENTION_TOL, makePagedCase, pagedCaseReference, pagedCaseTensors, type PagedCaseShape } from "../support/paged-cases.js";
import { makeSparseCase, sparseCaseReference, sparseCaseTensors, sparseWrittenMask, type SparseCase } from "../support/sparse-cases.js";
import { rng } from "../support/rng.js";
import type { OpenResult, RunRequest, RunResult } from "./page/harness.js";

const root = path.resolve(__dirname, "../..");
const SEED = process.env.BROWSER_SEED ? Number(process.env.BROWSER_SEED) : Math.floor(Math.random() * 2 ** 31);

/** The profile the runtime must pick for SwiftShader (no shader-f16, 256 invocations per workgroup, 32 KiB workgroup storage). */
const SWIFTSHADER_PROFILE = "mobile-256";

/** The example's PagedAttention instance (examples/vite-app/kernelc.config.json, llama-3-8b-b16). */
const PAGED_SHAPE: PagedCaseShape = {
  name: "llama-3-8b-b16",
  numHeads: 32,
  kvNumHeads: 8,
  headSize: 128,
  blockSize: 16,
  batch: 4,
  maxPast: 200,
  maxNew: 20,
};

/** The cache length the test builds the example's SparseAttention instance for (see buildPage). */
const SPARSE_CACHE_ROWS = 512;

/** The example's SparseAttention instance (phi-3-small-8k-no-rotary): 32/8 heads, H 128, blocks of 64, no rotary. */
const sparseCase = (c: Pick<SparseCase, "name" | "B" | "S" | "layout" | "past" | "packed">): SparseCase => ({
  N: 32,
  Nkv: 8,
  H: 128,
  sbs: 64,
  maxCacheSeq: SPARSE_CACHE_ROWS,
  rotary: "off",
  ...c,
});

/** The page, opened once for the file: the Vite build of the example plus the harness. */
interface Session {
  readonly browser: Browser;
  readonly page: Page;
  readonly server: TestServer;
  readonly opened: OpenResult;
  readonly pageErrors: string[];
  /** The temporary folder of the build (removed after the tests). */
  readonly tmp: string;
}

/** Copies examples/vite-app as a user has it (kernelc and vite in node_modules, the repo's specs and templates two levels up), adds the harness, builds it with Vite. */
async function buildPage(tmp: string): Promise<string> {
  for (const f of ["dist/vite/index.js", "dist/runtime/index.js"]) {
    if (!fs.existsSync(path.join(root, f)))
      throw new Error(`${f} is missing: run \`npm run build:compile\` first (the example imports kernelc from dist/)`);
  }
  fs.mkdirSync(path.join(tmp, "node_modules"));
  fs.symlinkSync(root, path.join(tmp, "node_modules", "kernelc"), "dir");
  fs.symlinkSync(path.join(root, "node_modules", "vite"), path.join(tmp, "node_modules", "vite"), "dir");
  for (const d of ["specs", "templates"]) fs.cpSync(path.join(root, d), path.join(tmp, d), { recursive: true });
  // The example reads the repository's specs and templates (../../specs): kernelc allows folders
  // outside the project only inside the repository it is in, which a .git entry marks.
  fs.mkdirSync(path.join(tmp, ".git"));
  const app = path.join(tmp, "examples", "vite-app");
  fs.cpSync(path.join(root, "examples", "vite-app"), app, { recursive: true, filter: (src) => !/[/\\](out|dist|node_modules)$/.test(src) });
  // The example's SparseAttention instance has an 8192-row cache (phi-3-small-8k): generating,
  // sending and checking such caches costs this 2-core machine about a minute per case, so the
  // test's copy builds that instance for SPARSE_CACHE_ROWS rows (the shaders differ in the cache
  // stride only). Everything else is the example as it is.
  const configFile = path.join(app, "kernelc.config.json");
  const config = JSON.parse(fs.readFileSync(configFile, "utf8")) as {
    profiles?: unknown;
    instances: Record<string, { values: Record<string, number> }[]>;
  };
  expect(config.profiles, "the example builds kernelc's default profiles").toBeUndefined();
  const sparseInstance = config.instances.SparseAttention?.[0]?.values;
  expect(sparseInstance?.["dim(shapes.pastKeyT, 2)"], "the example's SparseAttention cache length").toBe(8192);
  sparseInstance!["dim(shapes.pastKeyT, 2)"] = SPARSE_CACHE_ROWS;
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  fs.copyFileSync(path.join(__dirname, "page", "harness.ts"), path.join(app, "src", "browser-test.ts"));
  const html = path.join(app, "index.html");
  const page = fs.readFileSync(html, "utf8");
  expect(page).toContain("</body>");
  fs.writeFileSync(html, page.replace("</body>", '    <script type="module" src="/src/browser-test.ts"></script>\n  </body>'));
  const vite = await import("vite");
  const dist = path.join(tmp, "dist");
  await vite.build({ root: app, logLevel: "silent", build: { outDir: dist, emptyOutDir: true } });
  return dist;
}

async function openSession(): Promise<Session | undefined> {
  const browser = await launchChromium();
  if (!browser) return undefined;
  let server: TestServer | undefined;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-browser-"));
  const closeAll = async (): Promise<void> => {
    await browser.close();
    await server?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  try {
    server = await serve(await buildPage(tmp));
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on("pageerror", (err) => pageErrors.push(err.message));
    page.on("console", (m) => {
      if (m.type() === "error") pageErrors.push(m.text());
    });
    page.on("response", (r) => {
      if (r.status() >= 400) pageErrors.push(`HTTP ${r.status()} for ${r.url()}`);
    });
    await page.goto(`${server.url}/index.html`);
    await page
      .waitForFunction(() => "kernelcBrowserTest" in window, undefined, { timeout: 30_000 })
      .catch((err: unknown) => {
        throw new Error(`the page's harness did not start: ${String(err)}\npage errors: ${pageErrors.join("\n") || "none"}`);
      });
    const hasGpu = await page.evaluate(async () => !!navigator.gpu && (await navigator.gpu.requestAdapter()) !== null);
    if (!hasGpu) {
      await closeAll();
      return browserUnavailable(`${CHROMIUM} has no WebGPU adapter with flags ${CHROMIUM_FLAGS.join(" ")}`);
    }
    const opened = await page.evaluate(() => window.kernelcBrowserTest.open());
    return { browser, page, server, opened, pageErrors, tmp };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

const session = await openSession();

/** Sends a call's tensors to the server, runs it in the page, and returns the run's report and the tensors read back. */
async function runInPage(
  s: Session,
  name: string,
  kernel: string,
  call: Call,
  tensors: Readonly<Record<string, ArrayBufferView>>,
  outputs: Readonly<Record<string, number>>,
  readBack: readonly string[],
): Promise<{ result: RunResult; got: Record<string, Buffer> }> {
  const inputs: Record<string, string> = {};
  for (const [id, view] of Object.entries(tensors)) {
    s.server.data.set(`${name}/${id}`, new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
    inputs[id] = `/data/${name}/${id}`;
  }
  const request: RunRequest = {
    kernel,
    call,
    inputs,
    outputs,
    readBack,
    resultUrl: `/result/${name}`,
    poison: POISON_U32,
    scratchPoison: SCRATCH_POISON_WORDS,
  };
  const result = await s.page.evaluate((r) => window.kernelcBrowserTest.run(r), request);
  const got: Record<string, Buffer> = {};
  for (const id of readBack) {
    const bytes = s.server.results.get(`${name}/${id}`);
    if (!bytes) throw new Error(`the page sent no ${id} for ${name}`);
    got[id] = bytes;
  }
  for (const id of Object.keys(tensors)) s.server.data.delete(`${name}/${id}`);
  return { result, got };
}

const u16 = (b: Buffer): Uint16Array => new Uint16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

/** Mismatches of an f16 output beyond atol = rtol = 5e-3 (NaN included), and the largest error/tolerance ratio. */
function compareOutput(got: Uint16Array, want: ArrayLike<number>): { bad: string[]; maxRatio: number; maxErr: number } {
  expect(got.length, "output length").toBe(want.length);
  const bad: string[] = [];
  let maxRatio = 0;
  let maxErr = 0;
  for (let i = 0; i < want.length; i++) {
    const g = f16ToF32(got[i]);
    const err = Math.abs(g - want[i]);
    const ratio = err / (ATTENTION_TOL + ATTENTION_TOL * Math.abs(want[i]));
    if (!(ratio <= 1) && bad.length < 8) bad.push(`[${i}] got ${g} want ${want[i]}`);
    maxRatio = Number.isNaN(ratio) ? Infinity : Math.max(maxRatio, ratio);
    maxErr = Number.isNaN(err) ? Infinity : Math.max(maxErr, err);
  }
  return { bad, maxRatio, maxErr };
}

/** Cache elements whose bits differ from the expectation: `want` bits where written, else the bits before the call. */
function cacheMismatches(got: Uint16Array, before: Uint16Array, written: ArrayLike<number>, want: ArrayLike<number>): string[] {
  const bad: string[] = [];
  expect(got.length, "cache length").toBe(before.length);
  for (let i = 0; i < before.length && bad.length < 8; i++) {
    const expected = written[i] ? f32ToF16(want[i]) : before[i];
    if (got[i] !== expected) bad.push(`[${i}] written=${written[i]} got ${got[i].toString(16)} want ${expected.toString(16)}`);
  }
  return bad;
}

describe.runIf(session)("the seed kernels in Chromium (WebGPU on SwiftShader)", () => {
  const s = session as Session;
  const table: string[] = [];
  console.log(`browser test seed: ${SEED} (replay with BROWSER_SEED=${SEED})`);
  afterAll(async () => {
    if (table.length) console.log(["kernel | case | variant | passes | max |err| | max err/tol | ms", ...table].join("\n"));
    await s.browser.close();
    await s.server.close();
    fs.rmSync(s.tmp, { recursive: true, force: true });
  });

  test("the runtime picks the profile for the adapter, which lacks shader-f16", () => {
    const { adapter } = s.opened;
    expect(adapter.architecture, "the adapter is SwiftShader").toBe("swiftshader");
    expect(adapter.features).not.toContain("shader-f16");
    expect(adapter.features).toContain("subgroups");
    expect(adapter.maxComputeInvocationsPerWorkgroup).toBeLessThan(1024);
    expect(s.opened.profiles).toContain(SWIFTSHADER_PROFILE);
    expect(s.opened.chosen).toBe(SWIFTSHADER_PROFILE);
    expect(s.opened.loaded).toBe(SWIFTSHADER_PROFILE);
    expect(s.opened.kernels).toEqual(["PagedAttention", "SparseAttention"]);
  });

  test("the example app's own PagedAttention decode check passes", async () => {
    await s.page.waitForFunction(() => document.querySelector("#status")?.getAttribute("data-status") !== "running", undefined, {
      timeout: 60_000,
    });
    const status = await s.page.locator("#status").getAttribute("data-status");
    const text = await s.page.locator("#status").textContent();
    const log = await s.page.locator("#log").textContent();
    expect(status, `${text}\n${log}`).toBe("pass");
    expect(text).toContain(`profile ${SWIFTSHADER_PROFILE}`);
  });

  // Each case is built to take one path with the spec's default tunables (variant names below):
  // the decode batch reaches 33+ blocks, enough keys for split-K (numSplits = min(MAX_SPLITS,
  // maxBlocks * blockSize / SPLIT_MIN_KEYS, ...) >= 2); the mixed batch has 37 tokens and at most
  // 7 blocks per sequence, so it runs in one pass.
  const pagedCases = [
    {
      name: "decode",
      batch: { past: [300, 0, 520, 16], newTokens: [1, 1, 1, 1] },
      packed: false,
      slots: false,
      variant: "separate_derived_splitk",
    },
    {
      name: "mixed prefill/decode",
      batch: { past: [0, 21, 64, 5], newTokens: [19, 1, 1, 16] },
      packed: true,
      slots: true,
      variant: "packed_slot",
    },
  ] as const;
  for (const [index, pc] of pagedCases.entries()) {
    test(`PagedAttention ${pc.name} (packed QKV: ${pc.packed}, slot mapping: ${pc.slots})`, async () => {
      const c = makePagedCase(PAGED_SHAPE, pc.packed, pc.slots, rng(SEED + 7919 * index), pc.batch);
      const tensors = pagedCaseTensors(c);
      const outBytes = c.call.outputs!.outputT!.shape.reduce((a, b) => a * b, 1) * 2;
      const { result, got } = await runInPage(s, `paged-${index}`, "PagedAttention", c.call, tensors, { outputT: outBytes }, [
        "outputT",
        "keyCacheT",
        "valueCacheT",
      ]);
      expect(result.errors, "uncaptured WebGPU errors").toEqual([]);
      expect(result.variant, c.summary).toBe(pc.variant);
      const ref = pagedCaseReference(PAGED_SHAPE, c);
      const { bad, maxRatio, maxErr } = compareOutput(u16(got.outputT!), ref.output);
      table.push(
        `PagedAttention | ${pc.name} (${c.summary}) | ${result.variant} | ${result.dispatched.join(",")} | ${maxErr.toExponential(2)} | ${maxRatio.toFixed(3)} | ${result.ms}`,
      );
      expect(bad, `seed ${SEED}, ${c.summary}: outputs beyond atol = rtol = ${ATTENTION_TOL}`).toEqual([]);
      expect(c.liveRows, "the case has visible keys").toBeGreaterThan(0);
      expect(maxRatio).toBeLessThanOrEqual(1);
      // The caches, bit for bit: written rows hold the new K and V, everything else (garbage included) is untouched.
      expect(cacheMismatches(u16(got.keyCacheT!), c.keyCache, ref.written, ref.keyCache), `keyCacheT, seed ${SEED}`).toEqual([]);
      expect(cacheMismatches(u16(got.valueCacheT!), c.valueCache, ref.written, ref.valueCache), `valueCacheT, seed ${SEED}`).toEqual([]);
      expect(
        ref.written.some((w) => w === 1),
        "the case writes the caches",
      ).toBe(true);
    });
  }

  // With the default tunables the decode batch (2 rows of 8 KV heads, 512 cache rows) splits its
  // keys; the prompt (100 rows) runs in one pass.
  const sparseCases: readonly (SparseCase & { readonly variant: string })[] = [
    {
      ...sparseCase({ name: "decode S=1 at 200/447, separate", B: 2, S: 1, layout: [2, 2, 4], past: [200, 447], packed: false }),
      variant: "separate_splitk",
    },
    { ...sparseCase({ name: "prompt S=100, 4 layouts, packed", B: 1, S: 100, layout: [4, 1, 2], packed: true }), variant: "packed" },
  ];
  for (const [index, sc] of sparseCases.entries()) {
    test(`SparseAttention ${sc.name}`, async () => {
      const d = makeSparseCase(sc, rng(SEED + 104729 * (index + 1)));
      const outBytes = sc.B * sc.S * sc.N * sc.H * 2;
      const { result, got } = await runInPage(
        s,
        `sparse-${index}`,
        "SparseAttention",
        d.call,
        sparseCaseTensors(d),
        { outputT: outBytes },
        ["outputT", "pastKeyT", "pastValueT"],
      );
      expect(result.errors, "uncaptured WebGPU errors").toEqual([]);
      expect(result.variant).toBe(sc.variant);
      const expected = sparseCaseReference(d);
      const { bad, maxRatio, maxErr } = compareOutput(u16(got.outputT!), expected.output);
      table.push(
        `SparseAttention | ${sc.name} | ${result.variant} | ${result.dispatched.join(",")} | ${maxErr.toExponential(2)} | ${maxRatio.toFixed(3)} | ${result.ms}`,
      );
      expect(bad, `seed ${SEED}: outputs beyond atol = rtol = ${ATTENTION_TOL}`).toEqual([]);
      // The caches, bit for bit (no rotary: the appended rows are the inputs' f16 values).
      const written = sparseWrittenMask(sc, expected);
      expect(cacheMismatches(u16(got.pastKeyT!), d.pastKeyBits, written, expected.presentKey), `pastKeyT, seed ${SEED}`).toEqual([]);
      expect(cacheMismatches(u16(got.pastValueT!), d.pastValueBits, written, expected.presentValue), `pastValueT, seed ${SEED}`).toEqual(
        [],
      );
    });
  }

  test("the page reported no errors", () => {
    expect(s.pageErrors).toEqual([]);
  });
});
