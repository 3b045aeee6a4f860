/**
 * Spec text never becomes code: a spec whose condition strings hold comment terminators and
 * line breaks builds into a dispatcher that compiles, runs, and executes none of that text.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { buildProject } from "../../src/emit/build.js";
import { loadConfig } from "../../src/plan/config.js";
import { importDispatcher } from "../support/project-build.js";

const fixture = path.resolve(__dirname, "../fixtures/axpby");

describe("generated code and spec text", () => {
  it("quotes every literal: comment terminators and line breaks in spec text stay inert", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-inject-"));
    fs.cpSync(path.join(fixture, "templates"), path.join(dir, "templates"), { recursive: true });
    fs.mkdirSync(path.join(dir, "specs"));
    const spec = JSON.parse(fs.readFileSync(path.join(fixture, "specs/Axpby.json"), "utf8"));
    const payload = '*/ globalThis.kernelcPwned = 1; /* \n globalThis.kernelcPwned = 2; //';
    spec.when = [...spec.when, `${JSON.stringify(payload)} != dtypes.T`];
    fs.writeFileSync(path.join(dir, "specs/Axpby.json"), JSON.stringify(spec, null, 2));
    const result = await buildProject(dir, loadConfig(dir), ["desktop-64k"]);
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const source = result.files.get("desktop-64k/dispatcher.ts")!;
    expect(source).not.toMatch(/^\s*globalThis\.kernelcPwned/m);
    const mod = await importDispatcher(source);
    const planners = mod.planners as Record<string, (c: unknown) => { variant: string }>;
    const plan = planners.Axpby({ inputs: { xT: { shape: [8], dtype: "float32" } }, outputs: { yT: { shape: [8], dtype: "float32" } } });
    expect(plan.variant).toBe("vec4_f32");
    expect((globalThis as Record<string, unknown>).kernelcPwned).toBeUndefined();
  }, 120_000);
});
