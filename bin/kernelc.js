#!/usr/bin/env node
// The kernelc command: a thin wrapper over the compiled CLI in dist/ (run `npm run compile` first).
import { setFlagsFromString } from "node:v8";

// V8 optimizes a function once it has run a set amount of bytecode (its interrupt budget). A
// kernelc command mostly lasts about a second, in which the optimizing compiler's work (on threads
// beside the main one) is not paid back: a cold lint of the seed spent 2.7 s of CPU with V8's
// budget and 2.2 s with 8 times as much (docs/performance.md). Functions that stay hot (watch, a
// large build) are still optimized, after 8 times as much bytecode. Set before the CLI's modules
// load, unless the command line of node sets it.
if (!process.execArgv.some((a) => /^--interrupt[-_]budget\b/.test(a))) setFlagsFromString("--interrupt-budget=540672");

const { main } = await import("../dist/cli/main.js");

const code = await main(process.argv.slice(2), {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  cwd: process.cwd(),
  isTTY: Boolean(process.stderr.isTTY),
  env: process.env,
});
process.exitCode = code;
