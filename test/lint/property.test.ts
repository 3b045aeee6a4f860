/**
 * Property tests of the front end's robustness: whatever the input, the parser, the checker and
 * the loader either accept it or report it; they never throw anything but the documented errors.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { checkExpr, type Scope } from "../../src/check/check-expr.js";
import { checkKernel } from "../../src/check/check-spec.js";
import { INT, NUMBER, STRING } from "../../src/model/types.js";
import { evaluate, UNKNOWN, type EvalEnv } from "../../src/lang/evaluate.js";
import { EvalError } from "../../src/lang/ops.js";
import { lintPaths, makeCheckContext } from "../../src/api/lint.js";
import { loadSpecFile } from "../../src/load/load-spec.js";
import { ExprSyntaxError } from "../../src/lang/errors.js";
import { parseExpression } from "../../src/lang/parser.js";
import { seedRounds } from "../support/seeds.js";

const RUNS = 300;
/** Every property runs once per seed: a fixed seed (the same cases every run) and a printed random one. */
const SEEDS = seedRounds("property tests", "KERNELC_PROPERTY_SEED", [20261202]);

/** fc.assert once per seed of SEEDS (fast-check reports the seed and path of a counterexample). */
function assertEachSeed<T>(property: fc.IProperty<T>, numRuns: number): void {
  for (const seed of SEEDS) fc.assert(property, { numRuns, seed });
}
const root = path.resolve(__dirname, "../..");
const seedText = fs.readFileSync(path.join(root, "specs/PagedAttention.json"), "utf8");
const emptyTemplates = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-prop-"));
const ctx = makeCheckContext(emptyTemplates);

const scope: Scope = {
  tensors: new Map([
    ["x", { pointer: "/inputs/x", optional: false }],
    ["y", { pointer: "/inputs/y", optional: true }],
  ]),
  attrs: new Map([
    ["n", { type: NUMBER, pointer: "/attributes/n" }],
    ["mode", { type: STRING, pointer: "/attributes/mode" }],
  ]),
  tunables: new Set(["WG"]),
  typeParams: new Set(["T"]),
  limits: new Set(["maxBufferSize"]),
  features: new Set(["shader-f16"]),
  deriveType: (name) => (name === "rows" ? INT : undefined),
  deriveNames: () => ["rows"],
};

/** A total environment: every leaf has a value (or is UNKNOWN), so only EvalError may escape. */
const env: EvalEnv = {
  leaf: (leaf) => {
    switch (leaf.ns) {
      case "shapes":
        return [3, 4];
      case "ranks":
      case "tunables":
      case "limits":
        return 2;
      case "present":
      case "features":
        return true;
      case "tensorDtypes":
        return "float16";
      case "dtypes":
        return "f16";
      case "attrs":
        return leaf.name === "mode" ? "a" : UNKNOWN;
    }
  },
  dim: (_t, axis) => {
    if (axis < -2 || axis > 1) throw new EvalError("axis out of range");
    return 3;
  },
  hasAttr: () => true,
  derive: () => 5,
};

const TOKENS = [
  "1",
  "0",
  "2.5",
  "1e3",
  ".5",
  "9007199254740993",
  '"s"',
  "'t'",
  '"\\n"',
  '"\\q"',
  "true",
  "False",
  "none",
  "x",
  "rows",
  "shapes",
  "shapes.x",
  "ranks.y",
  "present.y",
  "tensorDtypes.x",
  "attrs.n",
  "attrs.mode",
  "attrs.constructor",
  "tunables.WG",
  "dtypes.T",
  "device.limits.maxBufferSize",
  "device.features",
  "device",
  "__proto__",
  "toString",
  "dim",
  "min",
  "max",
  "floor",
  "ceilDiv",
  "pow2ceil",
  "sameShape",
  "f16Ok",
  "has",
  "foo",
  "+",
  "-",
  "*",
  "/",
  "//",
  "%",
  "**",
  "==",
  "!=",
  "<",
  "<=",
  ">",
  ">=",
  "and",
  "or",
  "not",
  "if",
  "else",
  "in",
  "is",
  "(",
  ")",
  "[",
  "]",
  ",",
  ".",
  "~",
  "|",
  "=",
  "!",
  "{",
  "}",
  ":",
  "@",
  "$",
  "\\",
  '"',
  "'",
  "\u0000",
  "\ud800",
  "é",
];

const grammarish = fc.array(fc.constantFrom(...TOKENS), { maxLength: 24 }).chain((toks) => fc.constantFrom(toks.join(" "), toks.join("")));
const expressions = fc.oneof(grammarish, fc.string({ maxLength: 40 }), fc.string({ unit: "binary", maxLength: 20 }));

describe("random expressions", () => {
  it("parse + check + evaluate: only ExprSyntaxError and EvalError escape", () => {
    assertEachSeed(
      fc.property(expressions, (src) => {
        let ast;
        try {
          ast = parseExpression(src);
        } catch (e) {
          if (e instanceof ExprSyntaxError) {
            expect(e.span.start).toBeGreaterThanOrEqual(0);
            expect(e.span.end).toBeLessThanOrEqual(src.length);
            expect(e.span.start).toBeLessThanOrEqual(e.span.end);
            return;
          }
          throw e;
        }
        const r = checkExpr(ast, scope);
        for (const p of r.problems) {
          expect(p.span.start).toBeGreaterThanOrEqual(0);
          expect(p.span.end).toBeLessThanOrEqual(src.length);
        }
        if (r.problems.length > 0) return;
        try {
          evaluate(r.texpr, env);
        } catch (e) {
          if (!(e instanceof EvalError)) throw e;
        }
      }),
      RUNS,
    );
  });

  it("as a derive entry linted from a file: diagnostics, never a throw", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-prop-lint-"));
    const file = path.join(dir, "spec.json");
    const spec = JSON.parse(seedText);
    assertEachSeed(
      fc.property(expressions, (src) => {
        spec.derive.headVec = src;
        fs.writeFileSync(file, JSON.stringify(spec));
        const r = lintPaths([file], ctx);
        for (const d of r.diagnostics) {
          expect(typeof d.code).toBe("string");
          expect(d.message.length).toBeGreaterThan(0);
        }
      }),
      100,
    );
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

function loadAndCheck(text: string): void {
  const loaded = loadSpecFile("fuzz.json", text);
  for (const d of loaded.diagnostics) {
    const s = d.location?.span;
    if (s) {
      expect(s.start).toBeGreaterThanOrEqual(0);
      expect(s.end).toBeLessThanOrEqual(text.length + 1);
    }
  }
  if (loaded.spec) checkKernel(loaded.spec, ctx);
}

describe("random JSON", () => {
  it("fc.json(): load + check never throw", () => {
    assertEachSeed(fc.property(fc.json(), loadAndCheck), RUNS);
  });

  it("fc.anything() serialized: load + check never throw", () => {
    assertEachSeed(
      fc.property(fc.anything(), (v) => {
        loadAndCheck(JSON.stringify(v) ?? "null");
      }),
      RUNS,
    );
  });

  it("the seed spec with random deletions and insertions: load + check never throw", () => {
    const edit = fc.record({
      at: fc.nat({ max: seedText.length }),
      del: fc.nat({ max: 8 }),
      ins: fc.oneof(
        fc.constantFrom("", "{", "}", "[", "]", ",", ":", '"', "\\", "\\u", "0", "-", "1e400", "null", "true", '"x"', "__proto__"),
        fc.string({ maxLength: 4 }),
      ),
    });
    assertEachSeed(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 4 }), (edits) => {
        let text = seedText;
        for (const e of edits) {
          const at = Math.min(e.at, text.length);
          text = text.slice(0, at) + e.ins + text.slice(at + e.del);
        }
        loadAndCheck(text);
      }),
      RUNS,
    );
  });

  it("the seed spec itself loads and checks (the mutation test starts from a valid spec)", () => {
    const loaded = loadSpecFile("seed.json", seedText);
    expect(loaded.spec).toBeDefined();
    expect(checkKernel(loaded.spec!, ctx).kernel).toBeDefined();
  });
});
