/**
 * Per-call tuned choices (src/plan/tuned-rule.ts): how the tuner cuts calls into ranges, and how a
 * tune file's rule becomes part of the generated dispatcher's selection (the seed PagedAttention
 * on desktop-32k, its split tunables chosen by `pagedBaseWorkgroups`), checked against the
 * interpreter; the config's pins taking precedence; the errors for rules that cannot apply.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig, type TuneCallConfig } from "../../src/plan/config.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import { findRanges, ruleText } from "../../src/plan/tuned-rule.js";
import type { Call, Plan } from "../../src/model/plan.js";
import { golden } from "../support/golden.js";
import { importDispatcher, repoRoot } from "../support/project-build.js";
import { runCli } from "../support/cli.js";

const made: string[] = [];
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

describe("findRanges", () => {
  const c = (pins: number, ...ms: number[]) => ({ pins: { P: pins }, ms });
  it("keeps one range when one candidate is within the tolerance on every call", () => {
    const r = findRanges([8, 64, 512], [c(1, 1.0, 2.0, 4.0), c(2, 1.01, 2.01, 3.98)], 0.02);
    expect(r).toEqual([{ calls: [0, 1, 2], winner: 0 }]);
  });
  it("cuts where the winner changes, bounded by the largest key of the lower range", () => {
    const table = [c(1024, 0.08, 0.5, 0.41), c(4096, 0.1, 0.4, 0.38)];
    // Keys out of order: calls are ordered by key first.
    const r = findRanges([64, 512, 512], table, 0.02);
    expect(r).toEqual([
      { calls: [0], winner: 0, upTo: 64 },
      { calls: [1, 2], winner: 1 },
    ]);
  });
  it("keeps calls with equal keys in one range and picks their best geomean when no candidate serves both", () => {
    const table = [c(1, 1.0, 2.0), c(2, 1.5, 1.0)];
    expect(findRanges([7, 7], table, 0.02)).toEqual([{ calls: [0, 1], winner: 1 }]);
  });
  it("allows a winner to return after another range", () => {
    const table = [c(1, 1, 5, 1), c(2, 5, 1, 5)];
    const r = findRanges([1, 2, 3], table, 0.02);
    expect(r.map((x) => [x.winner, x.upTo])).toEqual([
      [0, 1],
      [1, 2],
      [0, undefined],
    ]);
  });
});

/** A copy of the repository's project with only desktop-32k, and the given tune file and extra config. */
function project(tune: unknown, extraConfig: Record<string, unknown> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-rule-"));
  made.push(dir);
  fs.cpSync(path.join(repoRoot, "specs"), path.join(dir, "specs"), { recursive: true });
  fs.cpSync(path.join(repoRoot, "templates"), path.join(dir, "templates"), { recursive: true });
  const config = JSON.parse(fs.readFileSync(path.join(repoRoot, "kernelc.config.json"), "utf8")) as Record<string, unknown>;
  fs.writeFileSync(
    path.join(dir, "kernelc.config.json"),
    JSON.stringify({ ...config, profiles: ["desktop-32k"], tunables: {}, ...extraConfig }, null, 2),
  );
  if (tune !== undefined) fs.writeFileSync(path.join(dir, "kernelc.tune.json"), JSON.stringify(tune, null, 2));
  return dir;
}

const measured = {
  adapter: { vendor: "test", architecture: "", device: "", description: "hand-written" },
  driver: "none",
  kernelc: "0.1.0",
  date: "2026-12-03",
  timer: "timestamp-query",
  repeats: 1,
  calls: ["decode-8x4096-bs16", "decode-64x4096-bs16"],
  candidates: 2,
  winner: { pins: { SPLIT_TARGET_WORKGROUPS: 4096, MAX_SPLITS: 128, SPLIT_MIN_KEYS: 128 }, ms: [0.09, 0.42], score: 0.194 },
};

function tuneFile(perCall: unknown): unknown {
  return {
    generatedBy: "kernelc 0.1.0",
    profiles: {
      "desktop-32k": {
        PagedAttention: { pins: { SPLIT_TARGET_WORKGROUPS: 4096, MAX_SPLITS: 128, SPLIT_MIN_KEYS: 128 }, perCall, measured },
      },
    },
  };
}

const RULE = {
  by: "pagedBaseWorkgroups",
  cases: [
    { upTo: 64, pins: { SPLIT_TARGET_WORKGROUPS: 1024, MAX_SPLITS: 128, SPLIT_MIN_KEYS: 64 }, calls: ["decode-8x4096-bs16"], ms: [0.0806] },
    { pins: { SPLIT_TARGET_WORKGROUPS: 4096, MAX_SPLITS: 128, SPLIT_MIN_KEYS: 128 }, calls: ["decode-64x4096-bs16"], ms: [0.383] },
  ],
};

/** The repository config's tune call of this name, as a call. */
function tuneCall(name: string): Call {
  const loaded = loadConfig(repoRoot);
  const c = loaded.config.tune.PagedAttention!.calls.find((x: TuneCallConfig) => x.name === name)!;
  return { inputs: c.inputs, ...(c.outputs ? { outputs: c.outputs } : {}), ...(c.attrs ? { attrs: c.attrs } : {}) };
}

/** A decode call with B sequences (8 KV heads: pagedBaseWorkgroups = 8 B). */
function decodeCall(B: number): Call {
  const base = tuneCall("decode-8x4096-bs16");
  const inputs = { ...base.inputs } as Record<string, { shape: number[]; dtype: string }>;
  const scale = (id: string, shape: number[]) => (inputs[id] = { ...inputs[id]!, shape });
  scale("queryT", [B, 4096]);
  scale("keyT", [B, 1024]);
  scale("valueT", [B, 1024]);
  scale("cumulativeSequenceLengthT", [B + 1]);
  scale("pastSeqlensT", [B]);
  scale("blockTableT", [B, 256]);
  return { ...base, inputs, outputs: { outputT: { shape: [B, 4096], dtype: "float16" } } };
}

const splitsOf = (p: Plan): number => p.passes.find((x) => x.id === "split_attention")?.z ?? 1;

async function buildPlanner(dir: string) {
  const loaded = loadConfig(dir);
  expect(loaded.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  const result = await compile(loaded);
  expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  const mod = await importDispatcher(result.files.get("desktop-32k/dispatcher.ts")!);
  const model = result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === "PagedAttention")!.model;
  const planners = mod.planners as Record<string, (call: Call) => Plan>;
  return { plan: planners.PagedAttention!, model, result };
}

const cli = runCli;

describe("a per-call rule in the build", () => {
  it("is folded into the generated dispatcher, which agrees with the interpreter on both sides of every bound", async () => {
    const { plan, model, result } = await buildPlanner(project(tuneFile(RULE)));
    // The rule's tunables are no longer enumerated: the generated code carries the rule.
    expect(result.files.get("desktop-32k/dispatcher.ts")).toMatch(/<= \(64 as number\)\) \? 1024 : 4096\)/);
    for (const B of [1, 7, 8, 9, 63, 64]) {
      const call = decodeCall(B);
      const generated = plan(call);
      expect(generated).toEqual(interpretPlan(model, call));
      // base = 8 B workgroups; B <= 8 is in the first range (target 1024, min keys 64: cap 4096 / 64 = 64).
      const base = 8 * B;
      const target = base <= 64 ? 1024 : 4096;
      const cap = Math.min(128, Math.floor(4096 / (base <= 64 ? 64 : 128)));
      const expected = Math.max(1, Math.min(cap, Math.ceil(target / base)));
      expect(splitsOf(generated), `B=${B}`).toBe(expected >= 2 ? expected : 1);
    }
    // The two ranges give different split counts for B = 8 and B = 9: 1024 / 64 = 16, against
    // ceil(4096 / 72) = 57 capped at 4096 keys / 128 = 32.
    expect(splitsOf(plan(decodeCall(8)))).toBe(16);
    expect(splitsOf(plan(decodeCall(9)))).toBe(32);
  });

  it("is shown by explain, and not used where the config pins a ruled tunable", async () => {
    const dir = project(tuneFile(RULE));
    const r = await cli(["explain", "PagedAttention", "--profile", "desktop-32k"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("chosen per call by `pagedBaseWorkgroups`");
    expect(r.stdout).toContain(`SPLIT_TARGET_WORKGROUPS = ${ruleText(RULE, "SPLIT_TARGET_WORKGROUPS")}`);
    expect(ruleText(RULE, "SPLIT_TARGET_WORKGROUPS")).toBe("1024 if pagedBaseWorkgroups <= 64 else 4096");
    expect(r.stdout).toContain(
      "pagedBaseWorkgroups <= 64: SPLIT_TARGET_WORKGROUPS=1024 MAX_SPLITS=128 SPLIT_MIN_KEYS=64 (decode-8x4096-bs16 0.0806 ms)",
    );
    expect(r.stdout).toContain("MAX_SPLITS = 128 (in every range)");

    const pinned = project(tuneFile(RULE), { tunables: { "desktop-32k": { PagedAttention: { SPLIT_TARGET_WORKGROUPS: 2048 } } } });
    const e = await cli(["explain", "PagedAttention", "--profile", "desktop-32k"], pinned);
    expect(e.stdout).toContain("a per-call rule on `pagedBaseWorkgroups` is not used: the config pins SPLIT_TARGET_WORKGROUPS");
    const { plan } = await buildPlanner(pinned);
    // 2048 / 64 = 32 splits at B = 8 (tuned MAX_SPLITS 128, SPLIT_MIN_KEYS 128: cap 32).
    expect(splitsOf(plan(decodeCall(8)))).toBe(32);
  });

  it("is refused with tune_rule_invalid when it cannot apply (unknown key; a tunable that shapes a shader)", async () => {
    const unknownKey = await cli(["build"], project(tuneFile({ ...RULE, by: "pagedBaseWorkgrups" })));
    expect(unknownKey.code).toBe(1);
    expect(unknownKey.stderr).toMatch(
      /^error\[tune_rule_invalid\]: the per-call rule for PagedAttention on profile desktop-32k cannot apply: the rule's key `pagedBaseWorkgrups` is not a top-level derive entry/m,
    );
    const dir = project(
      tuneFile({
        by: "pagedBaseWorkgroups",
        cases: [
          { upTo: 64, pins: { WORKGROUP_SIZE: 64 }, calls: ["a"], ms: [1] },
          { pins: { WORKGROUP_SIZE: 128 }, calls: ["b"], ms: [1] },
        ],
      }),
    );
    const shader = await cli(["build"], dir);
    expect(shader.code).toBe(1);
    expect(fs.existsSync(path.join(dir, "out"))).toBe(false);
    const actual = `exit: ${shader.code}\n${shader.stderr.split(fs.realpathSync(dir)).join("<project>").split(dir).join("<project>")}`;
    const file = path.join(repoRoot, "test/diagnostics/golden/tune_rule_invalid.txt");
    expect(golden(file, actual), "run UPDATE_GOLDEN=1 npx vitest run test/tune/per-call-rule.test.ts").toBe(actual);
    expect(actual).toMatch(/error\[tune_rule_invalid\]: .*WORKGROUP_SIZE shapes the shader of pass/);
  });
});
