/// <reference types="@webgpu/types" />
/**
 * The subgroup width at which the row designs' GPU tests (paged-attention-row.test.ts,
 * sparse-attention-row.test.ts) build and run them: the adapter's, when its subgroups are exactly
 * 8, 16 or 32 lanes wide (ROW_SUBGROUP_SIZE has builds for those). On any other adapter the tests
 * cannot run the path the shipped desktop profiles take; with CI=true that fails the file.
 */
import { expect, test } from "vitest";

/** The subgroup widths the row designs are written for (ROW_SUBGROUP_SIZE). */
export const ROW_WIDTHS: readonly number[] = [8, 16, 32];

/** The adapter's subgroup width when the row designs have a build for it, else undefined. */
export function rowWidth(device: GPUDevice | undefined): number | undefined {
  const info = device?.adapterInfo;
  return info && info.subgroupMinSize === info.subgroupMaxSize && ROW_WIDTHS.includes(info.subgroupMinSize)
    ? info.subgroupMinSize
    : undefined;
}

/**
 * Where the adapter exists but its subgroups fit no row build: with CI=true a failing test (the
 * row design's path must run numerically), elsewhere a warning that `what` does not run.
 */
export function requireRowWidth(device: GPUDevice | undefined, what: string): void {
  const info = device?.adapterInfo;
  if (!info || rowWidth(device) !== undefined) return;
  const problem = `the adapter's subgroups are ${info.subgroupMinSize}..${info.subgroupMaxSize} lanes wide; the row design has builds for exactly ${ROW_WIDTHS.join(", ")}`;
  if (process.env.CI === "true") {
    test("the adapter can run the row design", () => {
      expect.fail(`${problem} (CI=true: the row design's path must run numerically)`);
    });
  } else {
    console.warn(`${problem}; ${what} do not run`);
  }
}
