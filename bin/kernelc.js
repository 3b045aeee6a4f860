#!/usr/bin/env node
// The kernelc command: a thin wrapper over the compiled CLI in dist/ (run `npm run compile` first).
import { main } from "../dist/cli/main.js";

const code = await main(process.argv.slice(2), {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  cwd: process.cwd(),
  isTTY: Boolean(process.stderr.isTTY),
  env: process.env,
});
process.exitCode = code;
