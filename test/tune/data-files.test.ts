/** Tune calls' `{"file": …}` data: read from JSON files inside the project only. */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { TuneCallConfig } from "../../src/plan/config.js";
import { resolveDataFiles } from "../../src/tune/tune.js";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-tune-data-"));
const outside = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-tune-outside-"));
fs.mkdirSync(path.join(root, "data"));
fs.writeFileSync(path.join(root, "data/rows.json"), "[0, 2, 5]");
fs.writeFileSync(path.join(root, "data/bad.json"), '[1, "two"]');
fs.writeFileSync(path.join(outside, "secret.json"), "[7]");
fs.symlinkSync(path.join(outside, "secret.json"), path.join(root, "data/link.json"));
afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

const call = (file: string): TuneCallConfig => ({
  name: "c",
  inputs: { rowsT: { shape: [3], dtype: "int32" } },
  data: { rowsT: { file }, xT: { fill: "iota" } },
});

describe("tune data files", () => {
  it("reads an array of numbers from a file inside the project, and keeps other fills", () => {
    const r = resolveDataFiles(root, call("data/rows.json"));
    expect(r).toEqual({ ...call("data/rows.json"), data: { rowsT: [0, 2, 5], xT: { fill: "iota" } } });
  });
  it("refuses a file outside the project, also through a symbolic link", () => {
    expect(resolveDataFiles(root, call(`../${path.basename(outside)}/secret.json`))).toMatch(/is outside the project/);
    expect(resolveDataFiles(root, call("data/link.json"))).toMatch(/is outside the project/);
  });
  it("refuses a missing file and one that does not hold finite numbers", () => {
    expect(resolveDataFiles(root, call("data/none.json"))).toMatch(/data file data\/none.json of input rowsT: ENOENT/);
    expect(resolveDataFiles(root, call("data/bad.json"))).toMatch(/must hold a non-empty array of finite numbers/);
  });
  it.runIf(process.platform !== "win32")("refuses a FIFO or a folder without opening it (a FIFO hung kernelc tune)", () => {
    execFileSync("mkfifo", [path.join(root, "data/pipe.json")]);
    expect(resolveDataFiles(root, call("data/pipe.json"))).toBe(
      "data file data/pipe.json of input rowsT cannot be read: it is a FIFO (named pipe), not a regular file",
    );
    expect(resolveDataFiles(root, call("data"))).toBe("data file data of input rowsT cannot be read: it is a folder, not a regular file");
  });
});
