#!/usr/bin/env node
// Size of the code an app ships for one profile: the generated dispatcher of a profile (default
// desktop-32k) plus the kernelc runtime, bundled and minified by esbuild (`--bundle --minify
// --format=esm`), in bytes and gzip bytes; and the dispatcher alone. Run `npm run compile` first.
// `node bench/size.mjs [profile] [--max-kb N]` exits 1 when dispatcher + runtime exceeds N KB.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => pathToFileURL(path.join(root, "dist", p)).href;
const { compile } = await import(dist("api/compile.js"));
const { loadConfig } = await import(dist("plan/config.js"));

const args = process.argv.slice(2);
const maxAt = args.indexOf("--max-kb");
const maxKb = maxAt >= 0 ? Number(args.splice(maxAt, 2)[1]) : undefined;
const profile = args[0] ?? "desktop-32k";

const res = await compile(loadConfig(root), { profiles: [profile] });
const src = res.files.get(`${profile}/dispatcher.ts`);
if (typeof src !== "string") throw new Error(`no dispatcher for profile ${profile}`);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-size-"));
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
const both = await size("app.ts");
const alone = await size("dispatcher.ts");
const kb = (n) => `${(n / 1000).toFixed(1)} KB`;
console.log(`${profile} dispatcher + runtime, esbuild --bundle --minify --format=esm: ${kb(both.bytes)} (${kb(both.gzip)} gzip)`);
console.log(`${profile} dispatcher alone: ${kb(alone.bytes)} (${kb(alone.gzip)} gzip); source ${kb(src.length)}`);
fs.rmSync(dir, { recursive: true, force: true });
if (maxKb !== undefined && both.bytes > maxKb * 1000) {
  console.error(`over the limit: ${kb(both.bytes)} > ${maxKb} KB`);
  process.exit(1);
}
