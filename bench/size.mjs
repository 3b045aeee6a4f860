#!/usr/bin/env node
// Size of the code an app ships for one profile: the generated dispatcher of a profile (default
// desktop-32k) plus the kernelc runtime, bundled and minified by esbuild (`--bundle --minify
// --format=esm`), in bytes and gzip bytes (1 KB = 1000 bytes); and the dispatcher alone. Run
// `npm run compile` first. `node bench/size.mjs [profile] [--max-kb N]` exits 1 when dispatcher +
// runtime exceeds N KB. bench/run.js prints the same figures (sizeRows).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => pathToFileURL(path.join(root, "dist", p)).href;

/** The minified sizes of `profile`'s dispatcher with the runtime, and alone, in bytes. */
export async function measureSize(profile = "desktop-32k") {
  const { compile } = await import(dist("api/compile.js"));
  const { loadConfig } = await import(dist("plan/config.js"));
  const res = await compile(loadConfig(root), { profiles: [profile] });
  const src = res.files.get(`${profile}/dispatcher.ts`);
  if (typeof src !== "string") throw new Error(`no dispatcher for profile ${profile}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-size-"));
  try {
    fs.writeFileSync(path.join(dir, "dispatcher.ts"), src);
    fs.writeFileSync(
      path.join(dir, "app.ts"),
      `export * from "./dispatcher.ts";\nexport * from ${JSON.stringify(path.join(root, "dist/runtime/index.js"))};\n`,
    );
    const size = async (entry) => {
      const out = await build({
        entryPoints: [path.join(dir, entry)],
        bundle: true,
        minify: true,
        format: "esm",
        write: false,
        logLevel: "silent",
      });
      const bytes = out.outputFiles[0].contents;
      return { bytes: bytes.length, gzip: zlib.gzipSync(bytes, { level: 9 }).length };
    };
    return { profile, both: await size("app.ts"), alone: await size("dispatcher.ts"), source: src.length };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const kb = (n) => `${(n / 1000).toFixed(1)} KB`;

/** bench/run.js's rows for the size of `profile`'s dispatcher + runtime. */
export async function sizeRows(profile = "desktop-32k") {
  const s = await measureSize(profile);
  return [
    [`${profile} dispatcher + runtime, esbuild minified`, kb(s.both.bytes), `${kb(s.both.gzip)} gzip; target at most 80 KB`],
    [`${profile} dispatcher alone, esbuild minified`, kb(s.alone.bytes), `${kb(s.alone.gzip)} gzip; source ${kb(s.source)}`],
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  const maxAt = args.indexOf("--max-kb");
  const maxKb = maxAt >= 0 ? Number(args.splice(maxAt, 2)[1]) : undefined;
  const s = await measureSize(args[0]);
  console.log(`${s.profile} dispatcher + runtime, esbuild --bundle --minify --format=esm: ${kb(s.both.bytes)} (${kb(s.both.gzip)} gzip)`);
  console.log(`${s.profile} dispatcher alone: ${kb(s.alone.bytes)} (${kb(s.alone.gzip)} gzip); source ${kb(s.source)}`);
  if (maxKb !== undefined && s.both.bytes > maxKb * 1000) {
    console.error(`over the limit: ${kb(s.both.bytes)} > ${maxKb} KB`);
    process.exit(1);
  }
}
