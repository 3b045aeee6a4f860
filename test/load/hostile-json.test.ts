/**
 * Spec JSON a pull request can put in place that is valid JSON under the size limit yet hostile:
 * a hundred thousand unknown fields or duplicate keys (a problem each), integers JSON.parse cannot
 * hold exactly. Each is a located error, exit 1, in bounded time: never an internal error (a
 * `push(...diagnostics)` of 150,000 diagnostics overflowed the stack), a flood of output, or a
 * number silently rounded into generated code.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { loadSpecFile, MAX_FILE_DIAGNOSTICS } from "../../src/load/load-spec.js";
import { axpbyProject } from "../support/axpby-project.js";
import { runCli } from "../support/cli.js";

const AXPBY = fs.readFileSync(path.resolve(__dirname, "../fixtures/axpby/specs/Axpby.json"), "utf8");

/** The Axpby spec with `extra` text inserted as the first members of its top-level object. */
const withMembers = (extra: string): string => AXPBY.replace(/^\{/, `{${extra}`);

describe("a spec with very many problems", () => {
  const unknown = Array.from({ length: 150_000 }, (_, i) => `"k${i}": 1,`).join("");

  it("reports the first ones and says how many more there are", () => {
    const r = loadSpecFile("specs/Axpby.json", withMembers(unknown));
    expect(r.spec).toBeUndefined();
    expect(r.diagnostics).toHaveLength(MAX_FILE_DIAGNOSTICS);
    expect(r.diagnostics.slice(0, 2).map((d) => [d.code, d.location?.pointer])).toEqual([
      ["schema_unknown_field", "/k0"],
      ["schema_unknown_field", "/k1"],
    ]);
    expect(r.diagnostics.at(-1)!.notes.map((n) => n.message)).toEqual([
      `and ${150_000 - MAX_FILE_DIAGNOSTICS} more problems in this file, not shown: fix these and run lint again`,
    ]);
  });

  it("is exit 1 from lint, with no internal error, in bounded time", async () => {
    const root = axpbyProject();
    fs.writeFileSync(path.join(root, "specs/Axpby.json"), withMembers(unknown));
    const started = Date.now();
    const r = await runCli(["lint", "--no-render"], root);
    expect(r.stdout + r.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain(`and ${150_000 - MAX_FILE_DIAGNOSTICS} more problems in this file`);
    // A bound for a blow-up (the 150,000 members once overflowed the stack), far above the few
    // seconds it takes, so that a loaded machine does not fail it.
    expect(Date.now() - started).toBeLessThan(120_000);
  }, 240_000);

  it("caps duplicate keys the same way", () => {
    const dup = Array.from({ length: 50_000 }, () => `"$comment": "x",`).join("");
    const r = loadSpecFile("specs/Axpby.json", withMembers(dup));
    expect(r.diagnostics).toHaveLength(MAX_FILE_DIAGNOSTICS);
    expect(r.diagnostics[0]!.code).toBe("json_duplicate_key");
  });
});

describe("attribute numbers a double cannot hold as written", () => {
  const load = (attributes: string, constraints = "{}") =>
    loadSpecFile(
      "specs/Axpby.json",
      AXPBY.replace(/"attributes": \{.*\},\n/, `"attributes": ${attributes},\n"attributeConstraints": ${constraints},\n`),
    );

  it("are schema_value errors at the number: integers past 2^53 - 1, and non-zero numbers that read as 0", () => {
    const r = load(
      '{ "alpha": { "default": 9007199254740993 }, "beta": { "default": [1, -9007199254740993] }, "gamma": { "default": 1e-400 } }',
      '{ "alpha": { "values": [9007199254740993, 18446744073709551616] } }',
    );
    expect(r.spec).toBeUndefined();
    expect(r.diagnostics.map((d) => [d.code, d.location?.pointer, d.message])).toEqual([
      [
        "schema_value",
        "/attributes/alpha/default",
        "the default of attribute `alpha` `9007199254740993` is not exact: JSON numbers are doubles, which hold integers exactly only up to 2^53 - 1 (9007199254740991), so it would be read as 9007199254740992",
      ],
      [
        "schema_value",
        "/attributes/beta/default/1",
        "the default of attribute `beta` `-9007199254740993` is not exact: JSON numbers are doubles, which hold integers exactly only up to 2^53 - 1 (9007199254740991), so it would be read as -9007199254740992",
      ],
      [
        "schema_value",
        "/attributes/gamma/default",
        "the default of attribute `gamma` `1e-400` is too small for a double: it would be read as 0",
      ],
      [
        "schema_value",
        "/attributeConstraints/alpha/values/0",
        "an allowed value of attribute `alpha` `9007199254740993` is not exact: JSON numbers are doubles, which hold integers exactly only up to 2^53 - 1 (9007199254740991), so it would be read as 9007199254740992",
      ],
      [
        "schema_value",
        "/attributeConstraints/alpha/values/1",
        "an allowed value of attribute `alpha` `18446744073709551616` is not exact: JSON numbers are doubles, which hold integers exactly only up to 2^53 - 1 (9007199254740991), so it would be read as 18446744073709551616",
      ],
    ]);
    expect(r.diagnostics[0]!.hint).toBe("use an integer of at most 9007199254740991 in magnitude");
  });

  it("leave exact ones alone: 2^53 - 1, -0, 0.0, 1e-300, 1.5", () => {
    const r = load(
      '{ "alpha": { "default": 9007199254740991 }, "beta": { "default": -0 }, "gamma": { "default": [0.0, 1e-300, 1.5, 0e-999] } }',
      '{ "alpha": { "values": [-9007199254740991, 9007199254740991] } }',
    );
    expect(r.diagnostics).toEqual([]);
  });
});
