// The generated dispatchers export exactly what docs/runtime.md documents: `planners`, `PROFILE`,
// `KernelCallError`, the types of a call and a plan, and each kernel's call type. The numbered plan
// functions (`plan0`, …) that `planners` holds are module-private: their names follow the kernels'
// order, so exporting them would make a consumer's import break when a kernel is added.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, test } from "vitest";

const root = path.resolve(__dirname, "../..");
const documented = new Set([
  "planners",
  "PROFILE",
  "KernelCallError",
  "Call",
  "TensorDesc",
  "Plan",
  "PassPlan",
  "BindingPlan",
  "BindingResource",
  "CallErrorKind",
]);
const kernels = JSON.parse(fs.readFileSync(path.join(root, "out/core/kernels.json"), "utf8"));

describe("generated dispatcher exports", () => {
  const profiles: { name: string }[] = JSON.parse(fs.readFileSync(path.join(root, "out/profiles.json"), "utf8")).profiles;
  test.each(profiles.map((p) => p.name))("out/%s/dispatcher.ts exports only the documented names", (profile) => {
    const text = fs.readFileSync(path.join(root, "out", profile, "dispatcher.ts"), "utf8");
    const exported = [
      ...text.matchAll(
        /^export\s+(?:declare\s+)?(?:abstract\s+)?(?:const|let|var|function|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/gm,
      ),
    ].map((m) => m[1]);
    expect(exported).toContain("planners");
    const callTypes = Object.keys(kernels.kernels).map((k) => `${k}Call`);
    expect(exported).toEqual(expect.arrayContaining(callTypes));
    expect(exported.filter((name) => !documented.has(name) && !callTypes.includes(name))).toEqual([]);
    expect(text).not.toMatch(/^export\s*\{/m);
  });
});
