/**
 * A read-only output folder (or a read-only folder in it, or a read-only leftover of an interrupted
 * build) is the user's to fix: the build fails before it changes anything, says so truthfully, and
 * leaves no leftover that blocks later builds. Permissions mean nothing to root, so when the tests
 * run as root kernelc runs as `nobody` (setpriv); otherwise in-process as the current user.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BIN,
  kernelc,
  leftovers,
  makeProject,
  removeProjects,
  requireDist,
  snapshot,
  touchTemplate,
  type RunResult,
} from "./out-project.js";

afterAll(removeProjects);

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
const canDrop = !isRoot || (process.platform === "linux" && spawnSync("setpriv", ["--version"]).status === 0);
if (!canDrop) console.log("skipping the permission tests: running as root without setpriv");

/** Runs kernelc where permissions apply: as `nobody` through bin/kernelc.js when root, else in-process. */
async function unprivileged(argv: string[], root: string): Promise<RunResult> {
  if (!isRoot) return kernelc(argv, root);
  const r = spawnSync("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", process.execPath, BIN, ...argv], {
    cwd: root,
    env: { ...process.env, CI: "true", HOME: root },
    encoding: "utf8",
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A project that `unprivileged` may write (its temporary base handed to `nobody` when root), built once. */
async function builtProject(): Promise<string> {
  const root = makeProject();
  if (isRoot) spawnSync("chown", ["-R", `${NOBODY}:${NOBODY}`, path.dirname(root)]);
  const first = await unprivileged(["build"], root);
  expect(first.stderr).toMatch(/^wrote out\//);
  expect(first.code).toBe(0);
  return root;
}

describe.skipIf(!canDrop)("read-only output folders", () => {
  beforeAll(requireDist);

  for (const [what, sub] of [
    ["out/ itself", ""],
    ["a folder inside out/", "shaders"],
  ] as const) {
    it(`${what} read-only: exit 1, os_error naming it, out/ unchanged and nothing left beside it; writable again, the build works`, async () => {
      const root = await builtProject();
      const ro = path.join(root, "out", sub);
      touchTemplate(root, "read-only");
      const before = snapshot(path.join(root, "out"));
      fs.chmodSync(ro, 0o555);
      try {
        const r = await unprivileged(["build"], root);
        expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
        expect(r.stderr).toMatch(/error\[os_error\]: cannot access .*out.*: permission denied \(EACCES\)/);
        expect(r.stderr).toMatch(/out\/ was left as it was/);
        expect(r.code).toBe(1);
        expect(snapshot(path.join(root, "out"))).toEqual(before);
        expect(leftovers(root)).toEqual([]);
      } finally {
        fs.chmodSync(ro, 0o755);
      }
      const again = await unprivileged(["build"], root);
      expect(again.stderr).toMatch(/^wrote out\//);
      expect(again.code).toBe(0);
      expect(leftovers(root)).toEqual([]);
    });
  }

  it("a leftover of an interrupted build that cannot be removed is a warning, not a build that fails every time", async () => {
    const root = await builtProject();
    const leftover = path.join(root, ".out.old-999999-0badcafe");
    fs.cpSync(path.join(root, "out"), leftover, { recursive: true });
    if (isRoot) spawnSync("chown", ["-R", `${NOBODY}:${NOBODY}`, leftover]);
    fs.chmodSync(leftover, 0o555);
    try {
      touchTemplate(root, "leftover");
      const r = await unprivileged(["build"], root);
      expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
      expect(r.stderr).toMatch(
        /warning\[out_leftover\]: .*\.out\.old-999999-0badcafe .*could not be removed .*permission denied \(EACCES\)/,
      );
      expect(r.stderr).toMatch(/wrote out\//);
      expect(r.code).toBe(0);
      expect(fs.existsSync(leftover)).toBe(true);
    } finally {
      fs.chmodSync(leftover, 0o755);
    }
    expect((await unprivileged(["build", "--force"], root)).code).toBe(0);
    expect(leftovers(root)).toEqual([]);
  });
});
