/**
 * The tuner's per-call choice when some tuned tunables shape the shader (src/tune/tune.ts
 * bestRule): those are chosen once, for the group of candidates whose per-call rule over the other
 * tunables is fastest over all calls; the rule's ranges set only the other tunables.
 */
import { describe, expect, it } from "vitest";
import { bestRule } from "../../src/tune/tune.js";
import { geomean } from "../../src/plan/tuned-rule.js";

const score = (pins: Record<string, number>, ms: number[]) => ({ pins, ms, score: Number(geomean(ms).toPrecision(4)) });

describe("bestRule", () => {
  // Keys of four calls (say base workgroups 8, 64, 512, 1024). AHEAD shapes the shader; SPLITS does not.
  const keys = [8, 64, 512, 1024];
  // AHEAD 2: one SPLITS value is best everywhere (single best overall: 1.0 ms geomean).
  // AHEAD 1: no single SPLITS value is good everywhere (its singles are worse), but per call
  // (SPLITS 8 on small keys, 2 on large) it beats AHEAD 2 on every call.
  const table = [
    score({ AHEAD: 2, SPLITS: 8 }, [1, 1, 1, 1]),
    score({ AHEAD: 2, SPLITS: 2 }, [3, 3, 1.1, 1.1]),
    score({ AHEAD: 1, SPLITS: 8 }, [0.8, 0.8, 2, 2]),
    score({ AHEAD: 1, SPLITS: 2 }, [2, 2, 0.8, 0.8]),
  ];

  it("picks the shader setting whose per-call rule is fastest, not the best single setting's", () => {
    const best = bestRule(keys, table, ["SPLITS"]);
    expect(best.winner.pins.AHEAD).toBe(1);
    expect(best.table.every((s) => s.pins.AHEAD === 1)).toBe(true);
    expect(best.ranges.map((r) => [r.upTo, best.table[r.winner]!.pins.SPLITS, r.calls])).toEqual([
      [64, 8, [0, 1]],
      [undefined, 2, [2, 3]],
    ]);
  });

  it("keeps the shader setting of the best single candidate when its rule is as fast", () => {
    const slower = table.map((s) =>
      s.pins.AHEAD === 1
        ? score(
            s.pins,
            s.ms.map((x) => x * 1.5),
          )
        : s,
    );
    const best = bestRule(keys, slower, ["SPLITS"]);
    expect(best.winner.pins).toEqual({ AHEAD: 2, SPLITS: 8 });
    expect(best.ranges).toHaveLength(1);
  });

  it("with no shader-shaping tunable, is the plain per-call rule over every candidate", () => {
    const flat = table.filter((s) => s.pins.AHEAD === 1).map((s) => score({ SPLITS: s.pins.SPLITS! }, s.ms));
    const best = bestRule(keys, flat, ["SPLITS"]);
    expect(best.table).toHaveLength(2);
    expect(best.ranges.map((r) => best.table[r.winner]!.pins.SPLITS)).toEqual([8, 2]);
  });
});
