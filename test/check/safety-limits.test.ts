/**
 * The hostile-spec reproductions of issue 9 item 5 (and the WGSL value checks of item 4), each
 * asserted by the diagnostic it must produce, never by a duration: a 700-entry derive chain, a
 * chain just inside the nesting cap that must build, `1e300 * 1e300` in a `when`, names that are
 * Object.prototype members (kernel, tensor, attribute, tunable, type constraint, derive entry),
 * `__proto__` as a name, five tunables of 64 values (the candidate cap, the config option, lint's
 * warning), a spec string that would inject WGSL, a build-time value that is not finite, and
 * 20,000 unknown keys (lint and its text rendering stay linear; the first 1000 are shown, the last
 * of them saying how many more there are).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { compile } from "../../src/api/compile.js";
import { MAX_DERIVE_NESTING } from "../../src/check/derive-depth.js";
import { renderText } from "../../src/core/render-diagnostics.js";
import { MAX_FILE_DIAGNOSTICS } from "../../src/load/load-spec.js";
import { loadConfig } from "../../src/plan/config.js";
import type { Plan } from "../../src/model/plan.js";
import { lintProject } from "../support/project-shaders.js";
import { axpbyProject, type ProjectEdits } from "../support/axpby-project.js";
import { importDispatcher } from "../support/project-build.js";

function lint(root: string) {
  return lintProject(root);
}

function codes(diags: readonly { code: string; severity: string }[]): string[] {
  return diags.filter((d) => d.severity === "error").map((d) => d.code);
}

/** A chain of `n` derive entries c0 = c1 + 1, …, ending at `last`; `c0` is read by a `when`. */
function chain(n: number, last: string): ProjectEdits["spec"] {
  return (s) => {
    for (let i = 0; i < n; i++) s.derive[`c${i}`] = i === n - 1 ? last : `c${i + 1} + 1`;
    s.when.push("c0 > 0");
  };
}

describe("derive chains", () => {
  test("a 700-entry chain is a located derive_too_deep, in lint and in the build (no stack overflow)", async () => {
    const root = axpbyProject({ spec: chain(700, "1") });
    const l = lint(root);
    expect(codes(l.diagnostics)).toEqual(["derive_too_deep"]);
    const d = l.diagnostics[0];
    expect(d.message).toMatch(
      new RegExp(
        `evaluating \`c0\` nests 1399 levels deep through a chain of 700 derive entries .*the limit is ${MAX_DERIVE_NESTING} levels`,
      ),
    );
    expect(d.location?.pointer).toBe("/derive/c0");
    const built = await compile(loadConfig(root));
    expect(codes(built.diagnostics)).toEqual(["derive_too_deep"]);
  });

  test("a chain of 1000 entries (the schema allows 1024 per table), in reverse order, is reported, not overflowed", () => {
    const root = axpbyProject({
      spec: (s) => {
        for (let i = 999; i >= 0; i--) s.derive[`d${i}`] = i === 999 ? "dim(shapes.xT, 0)" : `d${i + 1} * 1`;
        s.when.push("d0 >= 0");
      },
    });
    expect(codes(lint(root).diagnostics)).toEqual(["derive_too_deep"]);
  });

  test("a chain just inside the cap lints clean and builds, read by a when, a template and the dispatcher", async () => {
    const root = axpbyProject({ spec: chain(500, "dim(shapes.xT, 0)"), appendTemplate: "" });
    expect(lint(root).diagnostics).toEqual([]);
    const built = await compile(loadConfig(root));
    expect(codes(built.diagnostics)).toEqual([]);
    const mod = await importDispatcher(built.files.get("core/dispatcher.ts")!);
    const plan = (mod.planners as Record<string, (c: unknown) => Plan>).Axpby({
      inputs: { xT: { shape: [8], dtype: "float32" } },
      outputs: { yT: { shape: [8], dtype: "float32" } },
      attrs: {},
    });
    expect(plan.variant).toBe("vec4");
  });

  test("a long cycle is one derive_cycle, found without recursion", () => {
    const root = axpbyProject({
      spec: (s) => {
        for (let i = 0; i < 900; i++) s.derive[`k${i}`] = `k${(i + 1) % 900} + 1`;
        s.when.push("k0 > 0");
      },
    });
    const l = lint(root);
    expect(codes(l.diagnostics)).toContain("derive_cycle");
    expect(l.diagnostics.find((d) => d.code === "derive_cycle")?.message).toMatch(
      /^derive entries depend on each other in a cycle: k0 -> k1 -> .* -> k899 -> k0$/,
    );
  });
});

describe("non-finite constants", () => {
  test("`1e300 * 1e300` in a when is reported by lint at the sub-expression; the build stops there too", async () => {
    const root = axpbyProject({ spec: (s) => s.when.push("1e300 * 1e300 > 0") });
    const l = lint(root);
    expect(l.diagnostics.map((d) => [d.code, d.message, d.location?.pointer])).toEqual([
      ["non_finite_value", "`1e300 * 1e300` evaluates to Infinity: kernelc works with finite numbers only", "/when/1"],
    ]);
    const text = fs.readFileSync(path.join(root, "specs/Axpby.json"), "utf8");
    const span = l.diagnostics[0].location!.span!;
    expect(text.slice(span.start, span.end)).toBe("1e300 * 1e300");
    expect(codes((await compile(loadConfig(root))).diagnostics)).toEqual(["non_finite_value"]);
  });

  test("through constant derive entries, and NaN; reported where the value becomes non-finite", () => {
    const root = axpbyProject({
      spec: (s) => {
        s.derive.huge = "1e300";
        s.derive.inf = "huge * huge";
        s.derive.nan = "inf - inf";
        s.when.push("inf > 0", "nan > 0", "huge * 1e10 > 0", "huge * 1e-10 > 0");
      },
    });
    const found = lint(root)
      .diagnostics.filter((d) => d.code === "non_finite_value")
      .map((d) => [d.location?.pointer, d.message.split(":")[0]]);
    expect(found).toEqual([
      ["/derive/inf", "`huge * huge` evaluates to Infinity"],
      ["/derive/nan", "`inf - inf` evaluates to NaN"],
      ["/when/3", "`huge * 1e10` evaluates to Infinity"],
    ]);
  });

  test("a value that becomes non-finite only with a profile's tunables is a located build error, not an internal error", async () => {
    const root = axpbyProject({ spec: (s) => s.when.push("tunables.WG * 1e300 * 1e300 > 0") });
    expect(lint(root).diagnostics).toEqual([]);
    const built = await compile(loadConfig(root));
    // Once per dtype assignment: both build on core (float16 packed in u32 pairs there).
    expect(codes(built.diagnostics)).toEqual(["non_finite_value", "non_finite_value"]);
    expect(built.diagnostics.map((d) => d.message).sort()).toEqual([
      "`tunables.WG * 1e300 * 1e300` evaluates to Infinity on profile core (T=float16, WG=256): kernelc works with finite numbers only",
      "`tunables.WG * 1e300 * 1e300` evaluates to Infinity on profile core (T=float32, WG=256): kernelc works with finite numbers only",
    ]);
    for (const d of built.diagnostics) expect(d.location?.pointer).toBe("/when/1");
  });

  test("finite arithmetic on leaves is not a constant and not reported", () => {
    const root = axpbyProject({ spec: (s) => s.when.push("dim(shapes.xT, 0) * 1e300 >= 0") });
    expect(lint(root).diagnostics).toEqual([]);
  });
});

describe("names that are Object.prototype members are plain names", () => {
  /** The fixture with its tensor, an attribute, a tunable, the type constraint and a derive entry renamed to Object.prototype members. */
  function renamed(kernel: string): string {
    const root = axpbyProject();
    const file = path.join(root, "specs/Axpby.json");
    const text = fs
      .readFileSync(file, "utf8")
      .replace(/"xT"/g, '"toString"')
      .replace(/\.xT\b/g, ".toString")
      .replace(/"alpha": \{/g, '"valueOf": {')
      .replace(/attrs\.alpha/g, "attrs.valueOf")
      .replace(/"WG"/g, '"hasOwnProperty"')
      .replace(/tunables\.WG/g, "tunables.hasOwnProperty")
      .replace(/"T"/g, '"isPrototypeOf"')
      .replace(/dtypes\.T\b/g, "dtypes.isPrototypeOf");
    const spec = JSON.parse(text);
    spec.name = kernel;
    spec.derive.toLocaleString = "n + 0";
    spec.when.push("toLocaleString >= 0");
    fs.writeFileSync(file, JSON.stringify(spec, null, 2));
    fs.writeFileSync(
      path.join(root, "kernelc.config.json"),
      JSON.stringify({
        profiles: ["core"],
        tunables: { "*": { [kernel]: { hasOwnProperty: 64 } } },
        instances: { [kernel]: [{ name: "eight", values: { "dim(shapes.toString, 0)": 8 } }] },
      }),
    );
    return root;
  }

  test.each(["constructor", "toString"])(
    "kernel %s with a tensor toString, attribute valueOf, tunable hasOwnProperty, dtype isPrototypeOf, derive toLocaleString",
    async (kernel) => {
      const root = renamed(kernel);
      expect(lint(root).diagnostics).toEqual([]);
      const built = await compile(loadConfig(root));
      expect(codes(built.diagnostics)).toEqual([]);
      expect(JSON.parse(built.files.get("core/kernels.json")!).kernels).toHaveProperty([kernel]);
      const mod = await importDispatcher(built.files.get("core/dispatcher.ts")!);
      const planners = mod.planners as Record<string, (c: unknown) => Plan>;
      expect(Object.hasOwn(planners, kernel)).toBe(true);
      const plan = planners[kernel]({
        inputs: { toString: { shape: [8], dtype: "float32" } },
        outputs: { yT: { shape: [8], dtype: "float32" } },
        attrs: { valueOf: 2 },
      });
      expect(plan.variant).toBe("vec4");
      const pass = plan.passes[0];
      const words = pass.resources[pass.bindings.findIndex((b) => b.name === "params")] as readonly number[];
      expect(new Float32Array(new Uint32Array([words[1]!]).buffer)[0]).toBe(2);
    },
  );

  test("`__proto__` as a kernel name is refused with a clear error", () => {
    const root = axpbyProject({ spec: (s) => (s.name = "__proto__") });
    expect(lint(root).diagnostics.map((d) => [d.code, d.message, d.location?.pointer])).toEqual([
      ["json_forbidden_key", "`__proto__` is not allowed as a name: it names a JavaScript object internal", "/name"],
    ]);
  });

  test("an undeclared Object.prototype member is still refused as a member", () => {
    const root = axpbyProject({ spec: (s) => s.when.push("attrs.toString > 0") });
    expect(codes(lint(root).diagnostics)).toEqual(["forbidden_member"]);
  });
});

describe("the candidate cap", () => {
  const fiveTunables: ProjectEdits["spec"] = (s) => {
    for (let i = 0; i < 5; i++) {
      s.tunables[`T${i}`] = { default: 1, values: Array.from({ length: 64 }, (_, j) => j + 1) };
      s.when.push(`tunables.T${i} > 0`);
    }
  };

  test("five tunables of 64 values: the build fails before enumerating, naming each factor and the product", async () => {
    const built = await compile(loadConfig(axpbyProject({ spec: fiveTunables })));
    expect(codes(built.diagnostics)).toEqual(["too_many_candidates"]);
    const d = built.diagnostics.find((x) => x.code === "too_many_candidates")!;
    expect(d.message).toContain("2 × 2 × 64 × 64 × 64 × 64 × 64 × 2 = 8,589,934,592, more than the limit of 4,096");
    expect(d.message).toContain("type constraint `T` (2 types), tunable `WG` (2 values), tunable `T0` (64 values)");
    expect(d.message).toContain("2 variants");
    expect(d.location?.pointer).toBe("/tunables/T0");
    expect(d.hint).toMatch(/maxCandidates/);
  });

  test("lint warns (it cannot see the config's pins)", () => {
    const l = lint(axpbyProject({ spec: fiveTunables }));
    expect(l.diagnostics.map((d) => [d.code, d.severity])).toEqual([["too_many_candidates", "warning"]]);
  });

  test("pins and maxCandidates in the config decide", async () => {
    const pinned = await compile(
      loadConfig(
        axpbyProject({ spec: fiveTunables, config: { profiles: ["core"], tunables: { "*": { Axpby: { T0: 1, T1: 1, T2: 1, T3: 1 } } } } }),
      ),
    );
    expect(codes(pinned.diagnostics)).toEqual([]);
    const tight = await compile(loadConfig(axpbyProject({ config: { profiles: ["core"], maxCandidates: 4 } })));
    expect(tight.diagnostics.find((d) => d.code === "too_many_candidates")?.message).toContain("2 × 2 × 2 = 8, more than the limit of 4");
    expect(codes((await compile(loadConfig(axpbyProject({ config: { profiles: ["core"], maxCandidates: 8 } })))).diagnostics)).toEqual([]);
  });

  test("maxCandidates must be a positive integer", () => {
    const loaded = loadConfig(axpbyProject({ config: { maxCandidates: 0 } }));
    expect(loaded.diagnostics.map((d) => [d.code, d.location?.pointer])).toEqual([["config_invalid", "/maxCandidates"]]);
  });
});

describe("values printed into WGSL", () => {
  test("a spec string with a newline and punctuation that a template reads is a lint error at the literal", () => {
    const root = axpbyProject({
      spec: (s) => (s.derive.evil = '"f32;\\nfn evil() {}\\n//" if isF16 else "f32"'),
      appendTemplate: "// {{ evil }}\n",
    });
    const l = lint(root);
    expect(l.diagnostics.map((d) => [d.code, d.location?.pointer])).toEqual([["wgsl_value_invalid", "/derive/evil"]]);
    const text = fs.readFileSync(path.join(root, "specs/Axpby.json"), "utf8");
    const span = l.diagnostics[0].location!.span!;
    expect(text.slice(span.start, span.end)).toBe('\\"f32;\\\\nfn evil() {}\\\\n//\\"');
  });

  test("identifiers and WGSL type names are fine; strings compared but not read are not checked", () => {
    const root = axpbyProject({
      spec: (s) => (s.derive.ty = '"array<vec4<f16>, 8>" if dtypes.T == "a b" else "f32"'),
      appendTemplate: "// {{ ty }}\n",
    });
    expect(lint(root).diagnostics).toEqual([]);
  });

  test("a build-time value that is not finite is reported at the spec entry before rendering", async () => {
    const root = axpbyProject({ spec: (s) => (s.derive.big = "tunables.WG * 1e300 * 1e300"), appendTemplate: "// {{ big }}\n" });
    expect(lint(root).diagnostics).toEqual([]);
    const built = await compile(loadConfig(root));
    expect(built.diagnostics.find((x) => x.code === "non_finite_value")?.location?.pointer).toBe("/derive/big");
    const d = built.diagnostics.find((x) => x.code === "wgsl_value_invalid");
    expect(d?.message).toMatch(/reads `big`.* Infinity is not a finite number/);
    expect(d?.location?.pointer).toBe("/derive/big");
  });
});

describe("lint is linear in the number of unknown keys", () => {
  test("20,000 unknown keys: one located diagnostic each for the first 1000, rendered as text with code frames", () => {
    const root = axpbyProject({
      spec: (s) => {
        for (let i = 0; i < 20000; i++) s[`unknownKey${i}`] = i;
      },
    });
    const file = path.join(root, "specs/Axpby.json");
    fs.writeFileSync(file, JSON.stringify(JSON.parse(fs.readFileSync(file, "utf8")))); // one line, as minified JSON
    const l = lint(root);
    expect(l.diagnostics).toHaveLength(MAX_FILE_DIAGNOSTICS);
    expect(l.diagnostics.every((d) => d.code === "schema_unknown_field" && d.location?.span !== undefined)).toBe(true);
    const text = renderText(l.diagnostics, (f) => l.sources.get(f));
    expect(text).toContain("error[schema_unknown_field]: unknown field `unknownKey999` at the top level of the spec");
    expect(text).toContain("and 19000 more problems in this file, not shown");
    expect(text.split("\n").filter((x) => x.includes("^")).length).toBe(MAX_FILE_DIAGNOSTICS);
  }, 120_000);
});
