/** The docs stay true: every diagnostic code is documented, and every doc the README links exists. */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { CODES } from "../../src/core/codes.js";

const root = path.resolve(__dirname, "../..");

describe("docs", () => {
  it("docs/diagnostics.md lists every code with its severity", () => {
    const doc = fs.readFileSync(path.join(root, "docs/diagnostics.md"), "utf8");
    for (const [code, info] of Object.entries(CODES)) expect(doc, code).toContain(`| \`${code}\` | ${info.severity} |`);
  });

  it("every file the README links exists", () => {
    const readme = fs.readFileSync(path.join(root, "README.md"), "utf8");
    const links = [...readme.matchAll(/\]\(([^)#]+)\)/g)].map((m) => m[1]).filter((l) => !l.startsWith("http"));
    expect(links.length).toBeGreaterThan(5);
    for (const l of links) expect(fs.existsSync(path.join(root, l)), l).toBe(true);
  });
});
