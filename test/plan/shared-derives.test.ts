/**
 * Derive values shared between the combinations of an instance's unfixed booleans (enumeration's
 * SharedDerives): an entry that reads one of them is evaluated in each combination, an entry that
 * reads none once for all of them.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import type { Leaf } from "../../src/model/ir.js";
import { enumerateKernel } from "../../src/plan/enumerate.js";
import { DeriveEnv, sharedDerives, StaticLeaves, type StaticFacts } from "../../src/plan/env.js";
import { checkSpecObject, probeSpec } from "../check/probe-spec.js";

const FACTS: StaticFacts = { dtypes: { T: "float32" }, tunables: { WG: 64 }, limits: {}, features: new Set() };

function templates(text: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-shared-derives-"));
  fs.writeFileSync(path.join(dir, "probe.wgsl.jinja"), text);
  return dir;
}

describe("SharedDerives", () => {
  it("keeps the shared entries' values for every environment, and the others' per environment", () => {
    const { kernel } = checkSpecObject(probeSpec());
    let dims = 0;
    const leaves = (bias: boolean): StaticLeaves => {
      const inner = new StaticLeaves(
        FACTS,
        new Map<string, boolean | number>([
          ["present.bias", bias],
          ["dim(shapes.x, 0)", 8],
        ]),
      );
      return Object.assign(Object.create(inner) as StaticLeaves, {
        dim: (t: string, a: number) => (dims++, inner.dim(t, a)),
        leaf: (l: Leaf) => inner.leaf(l),
      });
    };
    const shared = sharedDerives((name) => name !== "flag");
    const withBias = new DeriveEnv(kernel!.derive, leaves(true), shared);
    const without = new DeriveEnv(kernel!.derive, leaves(false), shared);
    expect([withBias.derive("flag"), without.derive("flag")]).toEqual([true, false]);
    expect([withBias.derive("half"), without.derive("half")]).toEqual([4, 4]);
    expect(dims).toBe(1);
  });

  it("enumeration: a variant whose condition reads an unfixed boolean is built for the combination where it holds", () => {
    const spec = probeSpec();
    spec.variants = [
      {
        id: "withBias",
        priority: 1,
        when: ["flag"],
        passes: [{ id: "p", name: "P", shader: "probe.wgsl.jinja", bindings: [], dispatch: { x: "1" } }],
      },
      { id: "plain", passes: [{ id: "p", name: "P", shader: "probe.wgsl.jinja", bindings: [], dispatch: { x: "1" } }] },
    ];
    const { kernel, diagnostics } = checkSpecObject(
      spec,
      templates("// {{ flag }} {{ ratio }}\n@compute @workgroup_size(1) fn main() {}\n"),
    );
    expect(diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const build = enumerateKernel(kernel!, { name: "p", limits: {}, features: new Set() }, {}, [{ name: "i", values: new Map() }]);
    const requests = build.assignments[0].variants.map((v) => [v.variant.id, v.passes[0].requests.map((r) => r.key)]);
    expect(requests).toEqual([
      ["withBias", [[true]]],
      ["plain", [[false], [true]]],
    ]);
  });
});
