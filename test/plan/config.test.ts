import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { Diagnostic } from "../../src/core/diagnostic.js";
import { DEFAULT_CONFIG, type LoadedConfig, loadConfig, parseConfig, pinnedTunables } from "../../src/plan/config.js";
import { DEFAULT_PROFILES, resolveProfile } from "../../src/plan/profiles.js";

const ROOT = "/project";
const FILE = "/project/kernelc.config.json";

function parse(value: unknown): LoadedConfig {
  return parseConfig(typeof value === "string" ? value : JSON.stringify(value, null, 2), FILE, ROOT);
}

/** The diagnostics as compact rows: code, severity, pointer, and the spanned source text. */
function rows(text: string, diags: readonly Diagnostic[]) {
  return diags.map((d) => ({
    code: d.code,
    severity: d.severity,
    pointer: d.location?.pointer,
    text: d.location?.span ? text.slice(d.location.span.start, d.location.span.end) : undefined,
  }));
}

function only(value: unknown) {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  const r = parseConfig(text, FILE, ROOT);
  expect(r.diagnostics).toHaveLength(1);
  return { d: r.diagnostics[0], row: rows(text, r.diagnostics)[0], result: r };
}

const temps: string[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) rmSync(t, { recursive: true, force: true });
});
function tempRoot(): string {
  const t = mkdtempSync(path.join(tmpdir(), "kernelc-config-"));
  temps.push(t);
  return t;
}

describe("loadConfig", () => {
  it("works with no config file, on defaults", () => {
    const r = loadConfig(tempRoot());
    expect(r.diagnostics).toEqual([]);
    expect(r.file).toBeUndefined();
    expect(r.config).toEqual({
      specs: "specs",
      templates: "templates",
      out: "out",
      profiles: DEFAULT_PROFILES.map((p) => p.name),
      defineProfiles: [],
      tunables: {},
      instances: {},
      tune: {},
      tuned: {},
      maxCandidates: 4096,
      emit: "ts",
    });
    expect(r.profiles).toEqual(DEFAULT_PROFILES);
  });

  it("reads <root>/kernelc.config.json", () => {
    const root = tempRoot();
    writeFileSync(path.join(root, "kernelc.config.json"), JSON.stringify({ out: "build", profiles: ["core"] }));
    const r = loadConfig(root);
    expect(r.diagnostics).toEqual([]);
    expect(r.file).toBe(path.join(root, "kernelc.config.json"));
    expect(r.config.out).toBe("build");
    expect(r.config.specs).toBe("specs");
    expect(r.profiles.map((p) => p.name)).toEqual(["core"]);
  });

  it("reports an unreadable config", () => {
    const root = tempRoot();
    mkdirSync(path.join(root, "kernelc.config.json"));
    const r = loadConfig(root);
    expect(r.diagnostics.map((d) => d.code)).toEqual(["file_unreadable"]);
  });

  it("accepts the repository's own kernelc.config.json", () => {
    const repo = fileURLToPath(new URL("../..", import.meta.url));
    const r = loadConfig(repo);
    expect(r.diagnostics).toEqual([]);
    expect(r.profiles.map((p) => p.name)).toEqual(DEFAULT_PROFILES.map((p) => p.name));
    const instances = r.config.instances.PagedAttention;
    expect(instances.length).toBeGreaterThanOrEqual(4);
    expect(instances.length).toBeLessThanOrEqual(8);
    expect(instances[0].values).toEqual({
      "attrs.num_heads": 32,
      "attrs.kv_num_heads": 8,
      "dim(shapes.keyCacheT, 3)": 128,
      "dim(shapes.keyCacheT, 1)": 16,
    });
    expect(r.config.instances.SparseAttention.map((i) => i.name)).toEqual(["phi-3-small-8k", "phi-3-small-8k-no-rotary"]);
  });
});

describe("parseConfig: valid configs", () => {
  it("fills defaults for {}", () => {
    const r = parse({});
    expect(r.diagnostics).toEqual([]);
    expect(r.config).toEqual(DEFAULT_CONFIG);
    expect(r.file).toBe(FILE);
  });

  it("selects profiles in the given order", () => {
    const r = parse({ profiles: ["core", "desktop-64k"] });
    expect(r.profiles.map((p) => p.name)).toEqual(["core", "desktop-64k"]);
    expect(r.allProfiles).toHaveLength(9);
  });

  it("applies defineProfiles: overrides merge limits, new profiles are built by default", () => {
    const r = parse({
      defineProfiles: [
        { name: "desktop-48k", limits: { maxStorageBufferBindingSize: 2147483644, maxBufferSize: 4294967296 } },
        { name: "odd", limits: { maxComputeWorkgroupStorageSize: 24576 }, features: ["timestamp-query"] },
      ],
    });
    expect(r.diagnostics.map((d) => [d.code, d.severity, d.location?.pointer])).toEqual([
      ["profile_invalid", "warning", "/defineProfiles/1"],
    ]);
    expect(r.diagnostics[0].message).toContain('"core" comes earlier');
    expect(r.profiles.map((p) => p.name)).toEqual([...DEFAULT_PROFILES.map((p) => p.name), "odd"]);
    const l = resolveProfile(r.profiles[2]);
    expect([l.maxComputeWorkgroupStorageSize, l.maxStorageBufferBindingSize]).toEqual([49152, 2147483644]);
  });

  it("keeps tunables and instances, and resolves pins with '*' under profile pins", () => {
    const r = parse({
      tunables: { "*": { PagedAttention: { WORKGROUP_SIZE: 64, MAX_SPLITS: 8 } }, core: { PagedAttention: { WORKGROUP_SIZE: 32 } } },
      instances: {
        PagedAttention: [
          { name: "a", values: { "attrs.num_heads": 32, "present.slotMappingT": true } },
          { values: { "attrs.num_heads": 8 } },
        ],
      },
    });
    expect(r.diagnostics).toEqual([]);
    expect(pinnedTunables(r.config, "core", "PagedAttention")).toEqual({ WORKGROUP_SIZE: 32, MAX_SPLITS: 8 });
    expect(pinnedTunables(r.config, "compat", "PagedAttention")).toEqual({ WORKGROUP_SIZE: 64, MAX_SPLITS: 8 });
    expect(pinnedTunables(r.config, "core", "SparseAttention")).toEqual({});
    expect(pinnedTunables(r.config, "constructor", "toString")).toEqual({});
    expect(r.config.instances.PagedAttention[0].values["present.slotMappingT"]).toBe(true);
  });
});

describe("parseConfig: every error path gives a located diagnostic", () => {
  it("bad JSON", () => {
    const { d, result } = only('{ "out": "x", }');
    expect(d.code).toBe("json_syntax");
    expect(d.location?.file).toBe(FILE);
    expect(d.location?.span).toBeDefined();
    expect(result.config).toEqual(DEFAULT_CONFIG);
  });

  it("not an object", () => {
    expect(only("[1, 2]").row).toMatchObject({ code: "config_invalid", pointer: "" });
  });

  it("unknown top-level key, with a did-you-mean hint", () => {
    const { d, row } = only({ profile: ["core"] });
    expect(row).toEqual({ code: "config_invalid", severity: "error", pointer: "/profile", text: '"profile"' });
    expect(d.hint).toBe("did you mean `profiles`?");
    expect(d.message).toContain('unknown field "profile"');
  });

  it("a folder path with a control character is refused (it would be printed into terminals and logs)", () => {
    for (const field of ["out", "specs", "templates"] as const) {
      for (const bad of ["gen\u001b[31m", "gen\nerror: fake", "gen\r", "a\tb", "gen\u009b2J"]) {
        const { d, row } = only({ [field]: bad });
        expect(row, JSON.stringify(bad)).toMatchObject({ code: "config_invalid", pointer: `/${field}` });
        expect(d.message).toMatch(/^a folder path must not hold control characters/);
      }
    }
    expect(parseConfig(JSON.stringify({ out: "gén ëré/out" }), FILE, ROOT).diagnostics).toEqual([]);
  });

  it('an out folder Windows cannot create is refused (device names, <>:"|?*, a trailing dot or space), naming the key and a portable name', () => {
    const cases: [string, RegExp, string][] = [
      ["CON", /"CON" is a name Windows reserves for a device/, "CON-out"],
      ["gen/nul", /"nul" is a name Windows reserves for a device/, "gen/nul-out"],
      ["gen/Aux.js", /"Aux\.js" is \(by its base "Aux"\) a name Windows reserves/, "gen/Aux-out.js"],
      ["build/com7/x", /"com7" is a name Windows reserves/, "build/com7-out/x"],
      ["LPT1.tar.gz", /"LPT1\.tar\.gz" is \(by its base "LPT1"\) a name Windows reserves/, "LPT1-out.tar.gz"],
      ["prn", /"prn" is a name Windows reserves/, "prn-out"],
      ["out.", /"out\." ends with a dot, which Windows drops/, "out"],
      ["gen/out /x", /"out " ends with a space/, "gen/out/x"],
      ["a:b", /"a:b" holds :, which Windows does not allow/, "a-b"],
      ["C:/out", /"C:" holds :/, "C-/out"],
      ["a<b", /holds </, "a-b"],
      ["a>b", /holds >/, "a-b"],
      ['a"b', /holds "/, "a-b"],
      ["a|b", /holds \|/, "a-b"],
      ["what?", /holds \?/, "what-"],
      ["gen/*", /holds \*/, "gen/-"],
    ];
    for (const [out, why, fix] of cases) {
      const { d, row } = only({ out });
      expect(row, out).toMatchObject({ code: "config_invalid", severity: "error", pointer: "/out" });
      expect(d.message, out).toMatch(
        new RegExp(`^out ${JSON.stringify(out).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} cannot be created on Windows: `),
      );
      expect(d.message, out).toMatch(why);
      expect(d.hint, out).toContain(`set "out" to a portable path, such as "${fix}"`);
    }
    // Names that only look like one are fine: a device name inside a longer name, dots inside, "." and "..".
    for (const out of ["console", "nullable/out", "com10", "lpt", "gen.out/x", "./out", "sub/../out", "con-out", "auxiliary.d"])
      expect(parse({ out }).diagnostics, out).toEqual([]);
  });

  it("a specs or templates folder Windows cannot create is a warning (kernelc only reads it), naming the key", () => {
    for (const field of ["specs", "templates"] as const) {
      for (const [bad, why] of [
        ["my specs.", /ends with a dot/],
        ["src/aux", /"aux" is a name Windows reserves/],
        ["k:v", /holds :/],
      ] as const) {
        const r = parse({ [field]: bad });
        expect(
          r.diagnostics.map((d) => [d.code, d.severity, d.location?.pointer]),
          bad,
        ).toEqual([["config_invalid", "warning", `/${field}`]]);
        expect(r.diagnostics[0]!.message).toMatch(new RegExp(`^${field} "${bad.replace(".", "\\.")}" cannot be created on Windows: `));
        expect(r.diagnostics[0]!.message).toMatch(why);
        expect(r.diagnostics[0]!.message).toMatch(/kernelc reads it here, but the project could not be checked out and built there/);
        expect(r.diagnostics[0]!.hint).toMatch(new RegExp(`set "${field}" to a portable path`));
        expect(r.config[field]).toBe(bad);
      }
    }
  });

  it("a profile named like a Windows device is refused: out/<profile>/ could not be created there", () => {
    for (const name of ["con", "nul", "aux", "prn", "com1", "lpt9"]) {
      const { d } = only({ profiles: [name], defineProfiles: [{ name, limits: {} }] });
      expect(d.message, name).toMatch(/^a profile cannot be named like a Windows device \(con, prn, aux, nul, com1-9, lpt1-9\)/);
    }
    // Names that only start like one are fine.
    const ok = parseConfig(JSON.stringify({ profiles: ["console"], defineProfiles: [{ name: "console", limits: {} }] }), FILE, ROOT);
    expect(ok.diagnostics).toEqual([]);
  });

  it('a profile named "shaders" is refused: its folder would be out/shaders/, where the shader files are', () => {
    const { d, row } = only({ profiles: ["shaders"], defineProfiles: [{ name: "shaders", limits: {} }] });
    expect(row).toMatchObject({ code: "profile_invalid", pointer: "/defineProfiles/0/name" });
    expect(d.message).toMatch(/^a profile cannot be named "shaders": out\/shaders\/ holds the bundle's shader files/);
  });

  it("a config passed with --config under another name is called by its name, not kernelc.config.json", () => {
    const other = "/project/configs/ci.json";
    expect(parseConfig('{ "profiles": ["core"], "extra": 1 }', other, ROOT).diagnostics.map((d) => d.message)).toEqual([
      'unknown field "extra" in ci.json: kernelc does not define it',
    ]);
    expect(parseConfig("[1]", other, ROOT).diagnostics[0]!.message).toBe("ci.json must hold a JSON object, but it holds an array");
  });

  it("unknown key in an instance, and in a profile's limits, with hints", () => {
    const inst = only({ instances: { PagedAttention: [{ values: { a: 1 }, nam: "x" }] } });
    expect(inst.row).toMatchObject({ code: "config_invalid", pointer: "/instances/PagedAttention/0/nam", text: '"nam"' });
    expect(inst.d.hint).toBe("did you mean `name`?");
    const r = parse({ instances: { PagedAttention: [{ value: { a: 1 } }] } });
    expect(r.diagnostics.map((x) => x.location?.pointer).sort()).toEqual([
      "/instances/PagedAttention/0/value",
      "/instances/PagedAttention/0/values",
    ]);
    expect(r.diagnostics.find((x) => x.location?.pointer?.endsWith("/value"))?.hint).toBe("did you mean `values`?");
    const { d, row } = only({ defineProfiles: [{ name: "x", limits: { maxComputeWorkgroupStorageSiz: 32768 } }] });
    expect(row).toMatchObject({
      code: "profile_invalid",
      pointer: "/defineProfiles/0/limits/maxComputeWorkgroupStorageSiz",
      text: '"maxComputeWorkgroupStorageSiz"',
    });
    expect(d.hint).toBe("did you mean `maxComputeWorkgroupStorageSize`?");
  });

  it("missing profile name", () => {
    const { d, row } = only({ defineProfiles: [{ limits: {} }] });
    expect(row).toMatchObject({ code: "profile_invalid", pointer: "/defineProfiles/0/name" });
    expect(d.message).toContain('missing required field "name"');
  });

  it("unknown feature, with a hint", () => {
    const { d, row } = only({ defineProfiles: [{ name: "x", features: ["shader-f61"] }] });
    expect(row).toMatchObject({ code: "profile_invalid", pointer: "/defineProfiles/0/features/0", text: '"shader-f61"' });
    expect(d.hint).toBe("did you mean `shader-f16`?");
  });

  it("a profile limit worse than the default", () => {
    const { row } = only({ defineProfiles: [{ name: "x", limits: { maxComputeInvocationsPerWorkgroup: 64 } }] });
    expect(row).toMatchObject({
      code: "profile_invalid",
      pointer: "/defineProfiles/0/limits/maxComputeInvocationsPerWorkgroup",
      text: "64",
    });
  });

  it("an override making the binding larger than the buffer points at the override", () => {
    const { row } = only({ defineProfiles: [{ name: "core", limits: { maxStorageBufferBindingSize: 1073741824 } }] });
    expect(row).toMatchObject({ code: "profile_invalid", pointer: "/defineProfiles/0/limits/maxStorageBufferBindingSize" });
  });

  it("a profile defined twice", () => {
    const { row } = only({ profiles: ["x"], defineProfiles: [{ name: "x" }, { name: "x" }] });
    expect(row).toMatchObject({ code: "profile_invalid", pointer: "/defineProfiles/1/name", text: '"x"' });
  });

  it("unknown profile in profiles, with a hint", () => {
    const { d, row } = only({ profiles: ["core", "desktop-46k"] });
    expect(row).toEqual({ code: "unknown_profile", severity: "error", pointer: "/profiles/1", text: '"desktop-46k"' });
    expect(["did you mean `desktop-48k`?", "did you mean `desktop-64k`?"]).toContain(d.hint);
  });

  it("a profile listed twice", () => {
    expect(only({ profiles: ["core", "core"] }).row).toMatchObject({ code: "config_invalid", pointer: "/profiles/1" });
  });

  it("empty profiles", () => {
    expect(only({ profiles: [] }).row).toMatchObject({ code: "config_invalid", pointer: "/profiles" });
  });

  it("unknown profile in tunables, with a hint", () => {
    const { d, row } = only({ tunables: { "mobile-265": { PagedAttention: { WORKGROUP_SIZE: 64 } } } });
    expect(row).toEqual({ code: "unknown_profile", severity: "error", pointer: "/tunables/mobile-265", text: '"mobile-265"' });
    expect(d.hint).toBe("did you mean `mobile-256`?");
  });

  it.each([
    ["fractional", 1.5, "1.5"],
    ["a string", "64", '"64"'],
    ["past an i32", 2 ** 31, String(2 ** 31)],
  ])("a pinned tunable value that is %s", (_what, value, text) => {
    const { d, row } = only({ tunables: { core: { PagedAttention: { WORKGROUP_SIZE: value } } } });
    expect(row).toEqual({ code: "config_invalid", severity: "error", pointer: "/tunables/core/PagedAttention/WORKGROUP_SIZE", text });
    expect(d.message).toMatch(/an integer|must be a number|at most 2\^31 - 1/);
  });

  // A spec's tunable may default to 0 (PagedAttention's TEST_NO_ROW_FALLBACK) or hold negative
  // values, so a pin may too (0 and -4 were refused as not positive).
  it.each([0, -4])("a pinned tunable value of %s is accepted", (value) => {
    const parsed = parse({ tunables: { core: { PagedAttention: { TEST_NO_ROW_FALLBACK: value } } } });
    expect(parsed.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(parsed.config.tunables.core?.PagedAttention?.TEST_NO_ROW_FALLBACK).toBe(value);
  });

  it("a tunable name that is not an identifier", () => {
    expect(only({ tunables: { "*": { PagedAttention: { "WORKGROUP SIZE": 64 } } } }).row).toMatchObject({
      code: "config_invalid",
      pointer: "/tunables/*/PagedAttention/WORKGROUP SIZE",
    });
  });

  it("an instance value that is not a number, boolean or string", () => {
    // A string is the value of a string attribute; whether it fits the leaf is the back end's check (instance_invalid).
    expect(only({ instances: { PagedAttention: [{ values: { "attrs.num_heads": null } }] } }).row).toMatchObject({
      code: "config_invalid",
      pointer: "/instances/PagedAttention/0/values/attrs.num_heads",
      text: "null",
    });
  });

  it("an instance with no values, and duplicate instance names", () => {
    expect(only({ instances: { K: [{ values: {} }] } }).row).toMatchObject({ code: "config_invalid", pointer: "/instances/K/0/values" });
    expect(
      only({
        instances: {
          K: [
            { name: "a", values: { x: 1 } },
            { name: "a", values: { x: 2 } },
          ],
        },
      }).row,
    ).toMatchObject({
      code: "config_invalid",
      pointer: "/instances/K/1/name",
    });
  });

  it("a wrongly typed folder", () => {
    const { d, row } = only({ specs: 3 });
    expect(row).toEqual({ code: "config_invalid", severity: "error", pointer: "/specs", text: "3" });
    expect(d.message).toContain("the number 3");
  });

  it("an out folder that would clobber the project or its sources", () => {
    expect(only({ out: "." }).row).toMatchObject({ code: "config_invalid", pointer: "/out" });
    expect(only({ out: "specs/out" }).row).toMatchObject({ code: "config_invalid", pointer: "/out" });
    expect(only({ out: ".." }).row).toMatchObject({ code: "config_invalid", pointer: "/out" });
  });

  it("a __proto__ key", () => {
    expect(only('{"tunables": {"__proto__": {"K": {"A": 1}}}}').row).toMatchObject({
      code: "json_forbidden_key",
      pointer: "/tunables/__proto__",
    });
  });
});

describe("parseConfig: warnings", () => {
  it("a profile that can never be selected", () => {
    const r = parse({ defineProfiles: [{ name: "big", limits: { maxComputeWorkgroupStorageSize: 65536 } }] });
    expect(
      rows(
        JSON.stringify({ defineProfiles: [{ name: "big", limits: { maxComputeWorkgroupStorageSize: 65536 } }] }, null, 2),
        r.diagnostics,
      ),
    ).toMatchObject([{ code: "profile_invalid", severity: "warning", pointer: "/defineProfiles/0" }]);
    expect(r.profiles.map((p) => p.name)).toContain("big");
    const reordered = parse({
      profiles: ["big", "core"],
      defineProfiles: [{ name: "big", limits: { maxComputeWorkgroupStorageSize: 65536 } }],
    });
    expect(reordered.diagnostics).toEqual([]);
    expect(parse({ profiles: ["core", "mobile-256"] }).diagnostics.map((d) => [d.severity, d.location?.pointer])).toEqual([
      ["warning", "/profiles/1"],
    ]);
  });

  it("two instances pinning the same values", () => {
    const r = parse({ instances: { K: [{ values: { x: 1, y: 2 } }, { values: { y: 2, x: 1 } }] } });
    expect(r.diagnostics.map((d) => [d.code, d.severity, d.location?.pointer])).toEqual([["config_invalid", "warning", "/instances/K/1"]]);
    expect(r.config.instances.K).toHaveLength(2);
  });
});
