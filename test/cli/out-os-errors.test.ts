/** OS errors are user errors (issue 9.7): each errno becomes an `os_error` with the path, what it means and what to do; bugs stay bugs. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isOsError, osErrorDiagnostic } from "../../src/cli/os-errors.js";

/** The error a real fs call throws. */
function thrown(f: () => unknown): NodeJS.ErrnoException {
  try {
    f();
  } catch (err) {
    return err as NodeJS.ErrnoException;
  }
  throw new Error("expected the call to throw");
}

/** An errno error as Node makes them (as thrown by a syscall we cannot provoke as root). */
function errno(code: string, syscall: string, file: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${syscall} '${file}'`), { code, syscall, path: file, errno: -1 });
}

describe("os_error diagnostics", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-oserr-"));
  const file = path.join(dir, "f.txt");
  fs.writeFileSync(file, "x");
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const real: [string, () => unknown, RegExp][] = [
    ["ENOENT", () => fs.readFileSync(path.join(dir, "missing")), /does not exist/],
    ["EISDIR", () => fs.openSync(dir, "w"), /is a folder where kernelc expected a file/],
    ["ENOTDIR", () => fs.readdirSync(file), /one of the folders of .* is a file/],
    ["EEXIST", () => fs.mkdirSync(dir), /move it away/],
  ];
  for (const [code, f, hint] of real) {
    it(`${code} from a real fs call`, () => {
      const err = thrown(f);
      expect(err.code).toBe(code);
      expect(isOsError(err)).toBe(true);
      const d = osErrorDiagnostic(err, "out/ was left as it was");
      expect(d.code).toBe("os_error");
      expect(d.severity).toBe("error");
      expect(d.message).toContain(err.path!);
      expect(d.message).toContain(`(${code})`);
      expect(d.hint).toMatch(hint);
      expect(d.notes).toEqual([{ message: "out/ was left as it was" }]);
    });
  }

  const fabricated: [string, RegExp, RegExp][] = [
    ["ENOSPC", /no space left on the device/, /free space on the filesystem that holds/],
    ["EACCES", /permission denied/, /check the permissions of/],
    ["EPERM", /operation not permitted/, /check the permissions and attributes/],
    ["EROFS", /the filesystem is read-only/, /read-only filesystem/],
    ["EBUSY", /the resource is busy/, /in use/],
    ["EMFILE", /too many open files/, /ulimit -n/],
  ];
  for (const [code, what, hint] of fabricated) {
    it(`${code}: names the path, says what it means and what to do`, () => {
      const err = errno(code, "open", "/proj/out/x.ts");
      expect(isOsError(err)).toBe(true);
      const d = osErrorDiagnostic(err);
      expect(d.message).toBe(`cannot open /proj/out/x.ts: ${what.source.replaceAll("\\", "")} (${code})`);
      expect(d.message).toMatch(what);
      expect(d.hint).toMatch(hint);
      expect(d.location).toEqual({ file: "/proj/out/x.ts" });
    });
  }

  it("a rename error names both paths", () => {
    const err = Object.assign(errno("EXDEV", "rename", "/a/out"), { dest: "/b/.out.old-1" });
    expect(osErrorDiagnostic(err).message).toBe("cannot rename /a/out -> /b/.out.old-1: the operation crosses filesystems (EXDEV)");
  });

  it("bugs are not OS errors", () => {
    expect(isOsError(new TypeError("x is undefined"))).toBe(false);
    expect(isOsError(Object.assign(new Error("x"), { code: "ENOSPC" }))).toBe(false); // no syscall: not from the OS
    expect(isOsError(Object.assign(new Error("x"), { code: "ERR_INVALID_ARG_TYPE", syscall: "open" }))).toBe(false);
    expect(isOsError("ENOSPC")).toBe(false);
  });
});
