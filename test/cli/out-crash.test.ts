/**
 * Crash- and concurrency-safety of writing out/ (issue 9.2) and OS errors as user errors (9.7),
 * through `node bin/kernelc.js` child processes: kill -9 at each step of a build (the test hook
 * KERNELC_TEST_PAUSE_AT holds the build exactly there, e.g. between the two renames) and at random
 * times, then the next build recovers and leaves no leftovers; two builds at once; stale and live
 * locks; a full filesystem and a read-only one (tiny tmpfs, when running as root).
 *
 * Environment: OUT_CRASH_SEED=<n> replays the random kill times.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  kernelc,
  leftovers,
  makeProject,
  removeProjects,
  requireDist,
  runKernelc,
  snapshot,
  spawnKernelc,
  touchTemplate,
  waitForFile,
} from "./out-project.js";
import { rng } from "../support/rng.js";

afterAll(removeProjects);

const SEED = Number(process.env.OUT_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

beforeAll(() => requireDist());

/** A project with a full build in out/ and a changed template, so that the next build rewrites out/. */
async function builtAndChanged(tag: string): Promise<string> {
  const root = makeProject();
  const r = await kernelc(["build"], root);
  expect(r.code).toBe(0);
  touchTemplate(root, tag);
  return root;
}

/** After an interrupted build: the next build succeeds, out/ is a complete fresh build, nothing is left beside it. */
async function expectRecovered(root: string): Promise<string> {
  const r = await kernelc(["build"], root);
  expect(r.stderr).not.toMatch(/internal error/);
  expect(r.code).toBe(0);
  expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  expect(leftovers(root)).toEqual([]);
  expect(fs.readFileSync(path.join(root, "sentinel.txt"), "utf8")).toBe("project sentinel\n");
  return r.stderr;
}

describe("kill -9 during a build", () => {
  for (const point of ["locked", "staged", "swap", "cleanup"] as const) {
    it(`at "${point}": the next build recovers`, async () => {
      const root = await builtAndChanged(point);
      const go = path.join(path.dirname(root), "go");
      const child = spawnKernelc(["build"], root, { KERNELC_TEST_PAUSE_AT: point, KERNELC_TEST_PAUSE_FILE: go });
      await waitForFile(`${go}.reached`);
      child.kill("SIGKILL");
      const killed = await child.result;
      expect(killed.signal).toBe("SIGKILL");
      // The lock of the dead build is still there; the next build breaks it.
      expect(fs.existsSync(path.join(root, ".out.lock"))).toBe(true);
      if (point === "swap") {
        // Between the two renames: no out/, the previous tree aside, the new one staged.
        expect(fs.existsSync(path.join(root, "out"))).toBe(false);
        expect(leftovers(root).filter((n) => n.startsWith(".out.old-"))).toHaveLength(1);
        expect(leftovers(root).filter((n) => n.startsWith(".out.tmp-"))).toHaveLength(1);
      } else {
        expect(fs.existsSync(path.join(root, "out/.kernelc-out"))).toBe(true);
      }
      const stderr = await expectRecovered(root);
      if (point === "swap") expect(stderr).toMatch(/restored out\/ from .*\.out\.old-/);
      const shader = fs.readdirSync(path.join(root, "out/shaders"))[0]!;
      expect(fs.readFileSync(path.join(root, "out/shaders", shader), "utf8")).toContain(`// ${point}`);
    });
  }

  it(`at random times (seed ${SEED})`, async () => {
    const random = rng(SEED);
    const root = await builtAndChanged("r0");
    for (let i = 1; i <= 3; i++) {
      touchTemplate(root, `r${i}`);
      const child = spawnKernelc(["build"], root);
      const delay = Math.floor(random() * 2500);
      setTimeout(() => child.kill("SIGKILL"), delay);
      const r = await child.result;
      expect(r.stderr, `seed ${SEED}, kill after ${delay} ms`).not.toMatch(/internal error/);
      // out/ is either the previous build or the new one, or (killed between the renames) recoverable.
      await expectRecovered(root);
    }
  });

  it("a leftover kernelc cannot prove it wrote is kept, with a warning; its own leftovers are removed", async () => {
    const root = makeProject();
    fs.mkdirSync(path.join(root, ".out.tmp-11-0000aaaa"));
    fs.writeFileSync(path.join(root, ".out.tmp-11-0000aaaa/data.txt"), "user data\n");
    fs.mkdirSync(path.join(root, ".out.tmp-12-0000bbbb"));
    fs.mkdirSync(path.join(root, ".out.old-123-00000abc"));
    fs.writeFileSync(path.join(root, ".out.old-123-00000abc/.kernelc-out"), "x");
    fs.writeFileSync(path.join(root, ".out.old-123-00000abc/half.ts"), "x");
    // A previous tree half removed (marker and build-info.json are removed last): provably kernelc's.
    expect((await kernelc(["build", "--profile", "compat"], root)).code).toBe(0);
    fs.cpSync(path.join(root, "out"), path.join(root, ".out.old-456-00000def"), { recursive: true });
    fs.rmSync(path.join(root, ".out.old-456-00000def/compat"), { recursive: true });
    const r = await kernelc(["build", "--profile", "core"], root);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/warning\[out_leftover\]: .*\.out\.tmp-11-0000aaaa looks like a leftover/);
    // A marker that is not kernelc's, with a file that no build-info.json lists: not provably kernelc's.
    expect(r.stderr).toMatch(/warning\[out_leftover\]: .*\.out\.old-123-00000abc looks like a leftover/);
    expect(fs.readFileSync(path.join(root, ".out.tmp-11-0000aaaa/data.txt"), "utf8")).toBe("user data\n");
    expect(fs.readFileSync(path.join(root, ".out.old-123-00000abc/half.ts"), "utf8")).toBe("x");
    expect(leftovers(root).sort()).toEqual([".out.old-123-00000abc", ".out.tmp-11-0000aaaa"]);
  });
});

describe("the lock", () => {
  it("a folder where the lock file goes: os_error naming it, exit 1, the folder kept", async () => {
    const root = makeProject();
    fs.mkdirSync(path.join(root, ".out.lock"));
    fs.writeFileSync(path.join(root, ".out.lock/mine.txt"), "mine\n");
    const r = await kernelc(["build"], root, { KERNELC_LOCK_WAIT_MS: "1000" });
    expect(r.stderr).toMatch(/error\[os_error\]: cannot read \S*\.out\.lock: it is a folder, not a file \(EISDIR\)/);
    expect(r.stderr).toMatch(/hint: \S*\.out\.lock is a folder where kernelc expected a file/);
    expect(r.code).toBe(1);
    expect(fs.readFileSync(path.join(root, ".out.lock/mine.txt"), "utf8")).toBe("mine\n");
    expect(fs.existsSync(path.join(root, "out"))).toBe(false);
  });

  it("two builds at once both succeed, one after the other, and leave a complete out/", async () => {
    const root = await builtAndChanged("concurrent");
    const a = spawnKernelc(["build"], root);
    const b = spawnKernelc(["build", "--force"], root);
    const [ra, rb] = await Promise.all([a.result, b.result]);
    expect(ra.stderr).not.toMatch(/internal error|ENOTEMPTY/);
    expect(rb.stderr).not.toMatch(/internal error|ENOTEMPTY/);
    expect([ra.code, rb.code]).toEqual([0, 0]);
    expect(leftovers(root)).toEqual([]);
    // (--check through bin/: the inputs hash covers kernelc's own code, dist/ there, src/ in-process.)
    expect(runKernelc(["build", "--check"], root).code).toBe(0);
  });

  it("a live lock makes the build wait, then fail with out_locked naming the holder", async () => {
    const root = makeProject();
    const lock = path.join(root, ".out.lock");
    fs.writeFileSync(lock, JSON.stringify({ pid: process.pid, host: os.hostname(), started: "2026-01-01T00:00:00.000Z" }) + "\n");
    const r = await kernelc(["build"], root, { KERNELC_LOCK_WAIT_MS: "300" });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`waiting for another kernelc build \\(pid ${process.pid} on `));
    expect(r.stderr).toMatch(new RegExp(`error\\[out_locked\\]: another kernelc build \\(pid ${process.pid} on .*\\) is writing out/`));
    expect(r.stderr).toMatch(/hint: .*remove .*\.out\.lock/);
    expect(fs.existsSync(lock)).toBe(true);
    expect(fs.existsSync(path.join(root, "out"))).toBe(false);
  });

  it("a lock whose process is dead is stale and is broken", async () => {
    const root = makeProject();
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    const pid = Number(dead.stdout);
    fs.writeFileSync(
      path.join(root, ".out.lock"),
      JSON.stringify({ pid, host: os.hostname(), started: "2026-01-01T00:00:00.000Z" }) + "\n",
    );
    const r = await kernelc(["build", "--profile", "core"], root, { KERNELC_LOCK_WAIT_MS: "300" });
    expect(r.code).toBe(0);
    expect(leftovers(root)).toEqual([]);
  });

  it("an unreadable lock is stale once it is old (its writer died while writing it)", async () => {
    const root = makeProject();
    const lock = path.join(root, ".out.lock");
    fs.writeFileSync(lock, "");
    const fresh = await kernelc(["build", "--profile", "core"], root, { KERNELC_LOCK_WAIT_MS: "200" });
    expect(fresh.stderr).toMatch(/out_locked/);
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(lock, old, old);
    expect((await kernelc(["build", "--profile", "core"], root, { KERNELC_LOCK_WAIT_MS: "200" })).code).toBe(0);
  });
});

describe("failures leave the previous out/ intact", () => {
  it("a build with a WGSL error changes nothing", async () => {
    const root = makeProject();
    expect((await kernelc(["build"], root)).code).toBe(0);
    const before = snapshot(root);
    fs.appendFileSync(path.join(root, "templates/axpby.wgsl.jinja"), "fn broken() -> u32 { return undefined_name; }\n");
    const r = await kernelc(["build"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/build failed; out\/ was left as it was/);
    const after = snapshot(root);
    delete after["templates/axpby.wgsl.jinja"];
    delete before["templates/axpby.wgsl.jinja"];
    // kernelc's own verdict cache learns the new shader's verdict; nothing else may change.
    expect(JSON.parse(after[".kernelc-cache/tint-verdicts.json"]!).data.verdicts).toMatchObject(
      JSON.parse(before[".kernelc-cache/tint-verdicts.json"]!).data.verdicts,
    );
    delete after[".kernelc-cache/tint-verdicts.json"];
    delete before[".kernelc-cache/tint-verdicts.json"];
    expect(after).toEqual(before);
  });

  it("an output path through a file is refused, naming the file, and never advises moving it away", async () => {
    const root = makeProject();
    fs.writeFileSync(path.join(root, "afile"), "x\n");
    for (const args of [
      ["--out", "afile/out"],
      ["--out", "afile/deeper/out"],
      ["--check", "--out", "afile/out"],
    ]) {
      const r = await kernelc(["build", ...args], root);
      expect(r.stderr).not.toMatch(/internal error|move it away/);
      expect(r.stderr).toMatch(
        /error\[out_unsafe\]: refusing to write the output folder .*: its path goes through afile, which is a file, not a folder/,
      );
      expect(r.code).toBe(1);
    }
    expect(fs.readFileSync(path.join(root, "afile"), "utf8")).toBe("x\n");
    expect(fs.readdirSync(root).filter((n) => n.startsWith("."))).toEqual([]);
  });

  it("through bin/kernelc.js: --out . exits 1 with out_unsafe and deletes nothing", () => {
    const root = makeProject();
    const before = snapshot(path.dirname(root));
    const r = runKernelc(["build", "--out", "."], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[out_unsafe\]/);
    expect(snapshot(path.dirname(root))).toEqual(before);
  });
});

/** Why a tmpfs cannot be mounted here, or undefined when it can. */
function tmpfsUnavailable(): string | undefined {
  if (process.platform !== "linux") return "not Linux";
  if (process.getuid?.() !== 0) return "not running as root (mounting a tmpfs needs it)";
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-tmpfs-probe-"));
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir], { encoding: "utf8" });
  if (r.status !== 0) return `mount -t tmpfs failed: ${(r.stderr || r.error?.message || "").trim()}`;
  spawnSync("umount", [dir]);
  return undefined;
}

const noTmpfs = tmpfsUnavailable();
if (noTmpfs) console.log(`skipping the full and read-only filesystem tests: ${noTmpfs}`);

describe.skipIf(noTmpfs !== undefined)("out/ on a full or read-only filesystem (tmpfs)", () => {
  /** A project copied onto a fresh 2 MiB tmpfs; `fn` runs with its root, the tmpfs is unmounted after. */
  async function onTmpfs(fn: (root: string, mount: string) => Promise<void>): Promise<void> {
    const mount = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-tmpfs-"));
    expect(spawnSync("mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mount]).status).toBe(0);
    try {
      const root = path.join(mount, "proj");
      fs.cpSync(makeProject(), root, { recursive: true });
      await fn(root, mount);
    } finally {
      spawnSync("umount", [mount]);
    }
  }

  it("ENOSPC while writing: exit 1, os_error with the path, previous out/ intact, no leftovers", async () => {
    await onTmpfs(async (root, mount) => {
      expect((await kernelc(["build", "--profile", "core"], root)).code).toBe(0);
      const before = snapshot(path.join(root, "out"));
      const st = fs.statfsSync(mount);
      const filler = path.join(mount, "filler");
      fs.writeFileSync(filler, Buffer.alloc(Math.max(0, st.bavail * st.bsize - 8192)));
      touchTemplate(root, "full");
      const r = await kernelc(["build"], root);
      expect(r.stderr).not.toMatch(/internal error/);
      expect(r.stderr).toMatch(/error\[os_error\]: cannot \w+ .*: no space left on the device \(ENOSPC\)/);
      expect(r.stderr).toMatch(/hint: free space on the filesystem/);
      expect(r.stderr).toMatch(/out\/ was left as it was/);
      expect(r.code).toBe(1);
      expect(snapshot(path.join(root, "out"))).toEqual(before);
      expect(leftovers(root)).toEqual([]);
      fs.rmSync(filler);
      expect((await kernelc(["build"], root)).code).toBe(0);
      expect((await kernelc(["build", "--check"], root)).code).toBe(0);
    });
  });

  it("EROFS: exit 1, os_error naming the read-only filesystem", async () => {
    await onTmpfs(async (root, mount) => {
      expect((await kernelc(["build", "--profile", "core"], root)).code).toBe(0);
      const before = snapshot(root);
      expect(spawnSync("mount", ["-o", "remount,ro", mount]).status).toBe(0);
      const r = await kernelc(["build", "--force"], root);
      expect(r.stderr).not.toMatch(/internal error/);
      expect(r.stderr).toMatch(/error\[os_error\]: cannot \w+ .*: the filesystem is read-only \(EROFS\)/);
      expect(r.code).toBe(1);
      expect(snapshot(root)).toEqual(before);
    });
  });
});
