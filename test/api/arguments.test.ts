/**
 * The programmatic API's argument checks: from JavaScript, an option of the wrong type, a
 * misspelt option name, a missing profile, a kernel or profile that does not exist come back as
 * `ok: false` with a `usage` (or `unknown_profile`) diagnostic naming the option and what it takes,
 * never as a TypeError from inside the compiler; and a call explain() cannot plan is explained,
 * with `ok: false` and a call_invalid or call_rejected diagnostic.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { build, explain, lint, loadConfig, type Diagnostic } from "../../src/api/index.js";
import { INIT_FILES } from "../../src/cli/init-command.js";
import { writeProject } from "../support/temp-project.js";

const made: string[] = [];
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh copy of the `kernelc init` project. */
function project(): string {
  const dir = writeProject("api-args", INIT_FILES);
  made.push(dir);
  return dir;
}

/** [code, message, hint] of each diagnostic. */
const shown = (ds: readonly Diagnostic[]): [string, string, string | undefined][] => ds.map((d) => [d.code, d.message, d.hint]);

// Calls as JavaScript makes them: any value for any argument.
type Loose = (...args: unknown[]) => unknown;
const looseBuild = build as unknown as Loose;
const looseLint = lint as unknown as Loose;
const looseExplain = explain as unknown as Loose;
const looseLoadConfig = loadConfig as unknown as Loose;

describe("API arguments of the wrong kind are usage diagnostics", () => {
  const dir = project();

  it("a number for a path, in each function", async () => {
    const cases: [string, () => unknown][] = [
      ["loadConfig", () => looseLoadConfig({ cwd: dir, config: 5 })],
      ["lint", () => looseLint({ cwd: 5 })],
      ["build", () => looseBuild({ cwd: dir, config: 5 })],
      ["explain", () => looseExplain("Axpby", { cwd: dir, profile: "core", config: 5 })],
    ];
    for (const [fn, call] of cases) {
      const r = (await call()) as { ok: boolean; diagnostics: Diagnostic[] };
      expect(r.ok, fn).toBe(false);
      expect(
        r.diagnostics.map((d) => d.code),
        fn,
      ).toEqual(["usage"]);
      expect(r.diagnostics[0]!.message, fn).toMatch(/^(cwd|config) must be a (folder|config file) path.*\(a string\), got 5$/);
    }
  });

  it("an unknown option is named, with a did-you-mean and the options the function takes", async () => {
    const r = (await looseBuild({ cwd: dir, profile: ["core"] })) as { ok: boolean; diagnostics: Diagnostic[]; files: Map<string, string> };
    expect(r.ok).toBe(false);
    expect(r.files.size).toBe(0);
    expect(shown(r.diagnostics)).toEqual([
      [
        "usage",
        "unknown option `profile` of build()",
        "did you mean `profiles`? build() takes { cwd?, config?, profiles?, onProgress?, emit? }",
      ],
    ]);
    expect(shown(looseLint({ cwd: dir, path: ["specs"] }).diagnostics)).toEqual([
      ["usage", "unknown option `path` of lint()", "did you mean `paths`? lint() takes { cwd?, config?, paths?, templates? }"],
    ]);
    expect(shown(looseLoadConfig({ cwd: dir, confg: "kernelc.config.json" }).diagnostics)).toEqual([
      ["usage", "unknown option `confg` of loadConfig()", "did you mean `config`? loadConfig() takes { cwd?, config? }"],
    ]);
    const far = (await looseExplain("Axpby", { cwd: dir, profile: "core", verbose: true })) as { diagnostics: Diagnostic[] };
    expect(shown(far.diagnostics)).toEqual([
      ["usage", "unknown option `verbose` of explain()", "explain() takes { cwd?, config?, profile, call?, onProgress? }"],
    ]);
  });

  it("a progress callback that is not a function, a string for an array, an emit other than ts or js", async () => {
    const progress = (await looseBuild({ cwd: dir, onProgress: "log" })) as { diagnostics: Diagnostic[] };
    expect(shown(progress.diagnostics)).toEqual([
      [
        "usage",
        'onProgress must be a function called with each step\'s description, got "log"',
        "build() takes { cwd?, config?, profiles?, onProgress?, emit? }",
      ],
    ]);
    const explained = (await looseExplain("Axpby", { cwd: dir, profile: "core", onProgress: 1 })) as { diagnostics: Diagnostic[] };
    expect(explained.diagnostics.map((d) => d.message)).toEqual([
      "onProgress must be a function called with each step's description, got 1",
    ]);
    const profiles = (await looseBuild({ cwd: dir, profiles: "core" })) as { diagnostics: Diagnostic[] };
    expect(shown(profiles.diagnostics)).toEqual([
      ["usage", 'profiles must be an array of profile names (strings), got "core"', 'pass an array: profiles: ["core"]'],
    ]);
    expect(shown(looseLint({ cwd: dir, paths: ["specs", 3] }).diagnostics)).toEqual([
      [
        "usage",
        'paths must be an array of spec file or folder paths relative to cwd (strings), got ["specs",3]',
        "lint() takes { cwd?, config?, paths?, templates? }",
      ],
    ]);
    const emit = (await looseBuild({ cwd: dir, emit: "py" })) as { diagnostics: Diagnostic[] };
    expect(emit.diagnostics.map((d) => [d.code, d.message])).toEqual([["usage", 'emit must be "ts" or "js", got "py"']]);
  });

  it("options that are not an object, and a cwd that is not a folder", async () => {
    expect(shown(looseLint("specs").diagnostics)).toEqual([
      ["usage", 'the options of lint() must be an object, got "specs"', "lint() takes { cwd?, config?, paths?, templates? }"],
    ]);
    expect(shown(looseLoadConfig(null).diagnostics)).toEqual([
      ["usage", "the options of loadConfig() must be an object, got null", "loadConfig() takes { cwd?, config? }"],
    ]);
    const nowhere = path.join(dir, "no-such-folder");
    const r = (await looseBuild({ cwd: nowhere })) as { diagnostics: Diagnostic[] };
    expect(r.diagnostics.map((d) => [d.code, d.message])).toEqual([["usage", `cwd must be an existing folder, but ${nowhere} is not one`]]);
    // Left out or undefined is the default.
    expect(loadConfig({ cwd: dir, config: undefined }).ok).toBe(true);
  });

  it("explain(): the kernel must be a name, the profile is required; an unknown kernel or profile gets a did-you-mean", async () => {
    const noKernel = (await looseExplain(undefined, { cwd: dir, profile: "core" })) as { ok: boolean; diagnostics: Diagnostic[] };
    expect(noKernel.ok).toBe(false);
    expect(noKernel.diagnostics.map((d) => [d.code, d.message])).toEqual([
      ["usage", "the kernel of explain() must be a kernel name (a non-empty string), got undefined"],
    ]);
    const noOptions = (await looseExplain("Axpby")) as { diagnostics: Diagnostic[] };
    expect(noOptions.diagnostics.map((d) => d.message)).toEqual(["explain() needs the option `profile`: a profile name (a string)"]);
    const numberProfile = (await looseExplain("Axpby", { cwd: dir, profile: 64 })) as { diagnostics: Diagnostic[] };
    expect(numberProfile.diagnostics.map((d) => d.message)).toEqual(["profile must be a profile name (a string), got 64"]);
    const kernel = await explain("Axpbi", { cwd: dir, profile: "core" });
    expect(kernel.ok).toBe(false);
    expect(shown(kernel.diagnostics)).toEqual([["usage", "no kernel named `Axpbi`", "did you mean `Axpby`? kernels: Axpby"]]);
    const profile = await explain("Axpby", { cwd: dir, profile: "cor" });
    expect(profile.diagnostics.map((d) => [d.code, d.message])).toEqual([["unknown_profile", "unknown profile `cor`"]]);
    expect(profile.diagnostics[0]!.hint).toMatch(/^did you mean `core`\? known profiles: desktop-64k, /);
    const built = await build({ cwd: dir, profiles: ["desktop-32"] });
    expect(built.ok).toBe(false);
    expect(built.diagnostics.map((d) => [d.code, d.message])).toEqual([["unknown_profile", "unknown profile `desktop-32`"]]);
    expect(built.diagnostics[0]!.hint).toMatch(/^did you mean `desktop-32k`\? known profiles: /);
  });
});

describe("explain() of a call it cannot plan", () => {
  const dir = project();
  const call = JSON.parse(INIT_FILES.get("calls/axpby.json")!) as { inputs: Record<string, { shape: number[]; dtype: string }> };

  it("an invalid call: ok false, the explanation, and call_invalid with the pointer in a note", async () => {
    const r = await explain("Axpby", { cwd: dir, profile: "core", call: { ...call, inputs: { xT: { shape: [4, 4], dtype: "float32" } } } });
    expect(r.ok).toBe(false);
    expect(r.candidates.length).toBeGreaterThan(0);
    expect(r.text).toContain("error (invalid_call): Axpby: input `xT` must have rank 1, got 2");
    expect(r.call).toMatchObject({ error: { kind: "invalid_call", pointer: "/inputs/xT/shape" } });
    expect(r.diagnostics.map((d) => [d.code, d.message, d.location, d.notes.map((n) => n.message)])).toEqual([
      ["call_invalid", "invalid call of Axpby: input `xT` must have rank 1, got 2", undefined, ["at /inputs/xT/shape of the call"]],
    ]);
  });

  it("a call of the wrong form (an array) is call_invalid, not a TypeError", async () => {
    const r = await explain("Axpby", { cwd: dir, profile: "core", call: [] as never });
    expect(r.ok).toBe(false);
    expect(r.diagnostics.map((d) => d.code)).toEqual(["call_invalid"]);
  });

  it("an accepted call: ok true, no diagnostic", async () => {
    const r = await explain("Axpby", { cwd: dir, profile: "core", call });
    expect(r.ok).toBe(true);
    expect(r.diagnostics).toEqual([]);
  });
});
