/**
 * The layers of src/: each folder imports only from the folders below it (docs/architecture.md).
 * Reads every import and export-from of every source file, so an upward or sideways import, or a
 * cycle between folders, fails here with the file and the line.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src");

/** The compiler's layers, lowest first: a folder may import its own layer and those before it. */
const COMPILER_LAYERS = ["core", "model", "lang", "load", "check", "plan", "emit", "api", "cli"];
/** Folders outside the compiler's stack, with what each may import. */
const SIDE: Record<string, readonly string[]> = {
  runtime: ["model"],
  reference: ["runtime"],
  // The tuner compiles (api and below) and runs what it compiled (runtime); only the CLI uses it.
  tune: [...COMPILER_LAYERS.slice(0, COMPILER_LAYERS.indexOf("api") + 1), "runtime"],
  // The Vite plugin (kernelc/vite) sits above the API beside the CLI: it builds through api and writes out/ itself.
  vite: COMPILER_LAYERS.slice(0, COMPILER_LAYERS.indexOf("api") + 1),
};
/** Side folders a compiler layer may use besides the layers below it. */
const USES: Record<string, readonly string[]> = {
  cli: ["tune"],
};

function allowed(from: string): ReadonlySet<string> {
  if (from in SIDE) return new Set([from, ...SIDE[from]!]);
  const i = COMPILER_LAYERS.indexOf(from);
  return new Set([...COMPILER_LAYERS.slice(0, i + 1), ...(USES[from] ?? [])]);
}

interface Edge {
  readonly file: string;
  readonly line: number;
  readonly from: string;
  readonly to: string;
}

function edges(): Edge[] {
  const out: Edge[] = [];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".ts")) {
        const rel = path.relative(src, p).split(path.sep);
        const text = fs.readFileSync(p, "utf8");
        // Static imports and re-exports (also spread over several lines), side-effect imports, and dynamic import().
        const re =
          /(?:^|\n)\s*(?:import|export)\b[^;"']*?from\s*["'](\.{1,2}\/[^"']+)["']|(?:^|\n)\s*import\s*["'](\.{1,2}\/[^"']+)["']|\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;
        for (const m of text.matchAll(re)) {
          const spec = m[1] ?? m[2] ?? m[3]!;
          const line = text.slice(0, m.index + m[0].length).split("\n").length;
          const target = path.relative(src, path.resolve(path.dirname(p), spec)).split(path.sep);
          if (target[0] === "..") throw new Error(`${rel.join("/")}:${line} imports outside src/: ${spec}`);
          out.push({ file: rel.join("/"), line, from: rel.length > 1 ? rel[0]! : "(root)", to: target.length > 1 ? target[0]! : "(root)" });
        }
      }
    }
  };
  walk(src);
  return out;
}

describe("src/ layers", () => {
  const all = edges();

  it("has every folder placed in a layer", () => {
    const folders = fs
      .readdirSync(src, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    const loose = fs.readdirSync(src).filter((n) => n.endsWith(".ts"));
    expect(loose, "source files directly under src/ belong in a layer folder").toEqual([]);
    expect(folders.filter((f) => !COMPILER_LAYERS.includes(f) && !(f in SIDE))).toEqual([]);
  });

  it("imports only downward", () => {
    const bad = all
      .filter((e) => e.from !== e.to && !allowed(e.from).has(e.to))
      .map((e) => `${e.file}:${e.line}: ${e.from} imports ${e.to}`);
    expect(bad).toEqual([]);
  });

  it("has no cycle between folders", () => {
    const graph = new Map<string, Set<string>>();
    for (const e of all) if (e.from !== e.to) (graph.get(e.from) ?? graph.set(e.from, new Set()).get(e.from)!).add(e.to);
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const visit = (n: string, trail: string[]): void => {
      if (state.get(n) === "done") return;
      if (state.get(n) === "open") {
        cycles.push([...trail.slice(trail.indexOf(n)), n].join(" -> "));
        return;
      }
      state.set(n, "open");
      for (const m of graph.get(n) ?? []) visit(m, [...trail, n]);
      state.set(n, "done");
    };
    for (const n of graph.keys()) visit(n, []);
    expect(cycles).toEqual([]);
  });

  it("catches an upward import (self-test of the reader)", () => {
    expect(allowed("lang").has("check")).toBe(false);
    expect(allowed("runtime").has("core")).toBe(false);
    expect(allowed("cli").has("core")).toBe(true);
    expect(allowed("vite").has("api")).toBe(true);
    expect(allowed("vite").has("cli")).toBe(false);
    expect(allowed("cli").has("vite")).toBe(false);
    expect(all.some((e) => e.from === "cli" && e.to === "api")).toBe(true);
  });
});
