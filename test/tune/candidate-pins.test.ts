/**
 * The candidate settings `kernelc tune` times (src/tune/tune.ts candidatePins): per tunable, the
 * config's list, else the spec's `default` followed by its `values` (the order the build tries
 * them, docs/spec-format.md). It used to take `values` alone, so the tutorial's
 * `"WG": { "default": 256, "values": [64] }` was never timed at its default: one value left, the
 * tunable was not tuned at all.
 */
import { describe, expect, it } from "vitest";
import type { TunableSpec } from "../../src/model/spec.js";
import { candidatePins } from "../../src/tune/tune.js";

const where = { pointer: "", span: { start: 0, end: 0 } };
const tunable = (name: string, dflt: number, values?: number[]): TunableSpec => ({
  name,
  default: dflt,
  ...(values ? { values } : {}),
  keyWhere: where,
  where,
});

describe("candidatePins", () => {
  it("times the default and the fallback values of a tunable whose values leave out the default", () => {
    expect(candidatePins([tunable("WG", 256, [64])], undefined, new Set())).toEqual([{ WG: 256 }, { WG: 64 }]);
  });

  it("tries the default once when the values repeat it, in the build's order", () => {
    expect(candidatePins([tunable("WG", 64, [256, 64, 128])], undefined, new Set())).toEqual([{ WG: 64 }, { WG: 256 }, { WG: 128 }]);
  });

  it("leaves out a tunable with only its default, a pinned one, and takes the config's list over the spec's", () => {
    const tunables = [tunable("A", 1), tunable("B", 8, [4]), tunable("C", 2, [3])];
    expect(candidatePins(tunables, undefined, new Set(["C"]))).toEqual([{ B: 8 }, { B: 4 }]);
    expect(candidatePins(tunables, { B: [16, 32] }, new Set())).toEqual([
      { B: 16, C: 2 },
      { B: 16, C: 3 },
      { B: 32, C: 2 },
      { B: 32, C: 3 },
    ]);
  });
});
