/**
 * The docs stay true: every diagnostic code is documented and every documented code exists, every
 * relative link of the README and docs/ reaches its file (and #anchor), and every option a
 * command's --help lists is documented.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { CODES } from "../../src/core/codes.js";
import { runCli } from "../support/cli.js";

const root = path.resolve(__dirname, "../..");

/** README.md and every Markdown file under docs/, as paths relative to the root. */
function markdownFiles(): string[] {
  const out = ["README.md"];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith(".md")) out.push(rel);
    }
  };
  walk("docs");
  return out;
}

/** The text of a Markdown file without its fenced code blocks. */
function prose(file: string): string {
  return fs.readFileSync(path.join(root, file), "utf8").replace(/^```[\s\S]*?^```$/gm, "");
}

/** The anchors GitHub gives a Markdown file's headings. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(file).matchAll(/^#{1,6} +(.*?)\s*$/gm)) {
    const slug = m[1]
      .toLowerCase()
      .replace(/<[^>]+>/g, "")
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

describe("docs", () => {
  const diagnosticsDoc = fs.readFileSync(path.join(root, "docs/diagnostics.md"), "utf8");

  it("docs/diagnostics.md lists every code with its severity", () => {
    for (const [code, info] of Object.entries(CODES)) expect(diagnosticsDoc, code).toContain(`| \`${code}\` | ${info.severity} |`);
  });

  it("every code docs/diagnostics.md lists exists", () => {
    const documented = [...diagnosticsDoc.matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((m) => m[1]);
    expect(documented.length).toBeGreaterThan(50);
    expect(documented.filter((c) => !(c in CODES))).toEqual([]);
    expect(documented.filter((c, i) => documented.indexOf(c) !== i)).toEqual([]);
  });

  it("every relative link of the README and docs/ reaches its file and #anchor", () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of markdownFiles()) {
      for (const m of prose(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        const link = m[1];
        if (/^[a-z]+:/.test(link)) continue;
        checked++;
        const [target, anchor] = link.split("#", 2);
        const resolved = target === "" ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), target));
        if (!fs.existsSync(path.join(root, resolved))) broken.push(`${file}: ${link} (no ${resolved})`);
        else if (anchor !== undefined && (!resolved.endsWith(".md") || !anchors(resolved).has(anchor))) broken.push(`${file}: ${link} (no heading #${anchor} in ${resolved})`);
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });

  it("every option of every command's --help is documented", async () => {
    const docs = markdownFiles()
      .filter((f) => f !== "docs/performance.md")
      .map((f) => fs.readFileSync(path.join(root, f), "utf8"))
      .join("\n");
    const top = await runCli(["--help"], root);
    const commands = [...top.stdout.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]).filter((c) => c !== "help");
    expect(commands).toEqual(expect.arrayContaining(["init", "lint", "build", "watch", "explain", "tune", "profiles"]));
    const missing: string[] = [];
    for (const command of commands) {
      const help = await runCli([command, "--help"], root);
      expect(docs, command).toContain(`kernelc ${command}`);
      for (const m of help.stdout.matchAll(/^ {2}(?:-\w, )?(--[a-z][a-z-]*)/gm)) {
        if (m[1] !== "--help" && !new RegExp(`${m[1]}(?![a-z-])`).test(docs)) missing.push(`${command} ${m[1]}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
