/**
 * The kernelc command line. Exit codes: 0 success, 1 user errors (diagnostics), 2 usage errors
 * and internal errors. Only internal errors (bugs) print a stack trace.
 */
import { Command, CommanderError, Option } from "commander";
import { UserError } from "../core/diagnostic.js";
import { KERNELC_VERSION } from "../core/version.js";
import { fileSources, printDiagnostics, type Format, type Io } from "./io.js";
import { isOsError, osErrorDiagnostic } from "./os-errors.js";
// Each command's module is imported when the command runs (below), so that a command loads only
// what it uses: `lint` neither the dispatcher generator nor the tuner, `profiles` no compiler.
import type { LintOptions } from "./lint-command.js";
import type { TuneCommandOptions } from "./tune-command.js";
import type { WatchOptions } from "./watch-command.js";

export type { Format, Io } from "./io.js";

/** Runs the CLI with `argv` (without node and script). Returns the exit code. */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  let code = 0;
  // The --format of the command that runs: a user error it throws (a bad config, an unknown
  // profile) is printed in that format, as the command's own diagnostics are.
  let format: Format = "text";
  const program = new Command();
  const formatOption = () =>
    new Option("--format <format>", "diagnostic output format").choices(["text", "json", "github"]).default("text");
  program
    .name("kernelc")
    .description("Build-time compiler for WebGPU compute kernels: JSON specs + WGSL templates -> validated per-device bundles")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError("(run `kernelc --help` for usage)")
    .version(KERNELC_VERSION, "-V, --version", "print kernelc's version");

  program
    .command("init")
    .description("start a project: kernelc.config.json, an example spec, template and call (never overwrites a file)")
    .argument("[dir]", "the project folder (created if missing; default: the current folder)")
    .action(async (dir: string | undefined) => {
      const { runInit } = await import("./init-command.js");
      code = runInit(io, dir);
    });

  program
    .command("lint")
    .description(
      "check spec files (and folders of them), render their templates for the profiles and validate the WGSL with Tint; exit 0 when clean, 1 on errors",
    )
    .argument("[paths...]", "spec files or folders (default: the config's specs folder)")
    .option("--templates <dir>", "templates folder (default: the config's)")
    .option("--config <file>", "config file (default: kernelc.config.json if present)")
    .option("--profile <names...>", "render for these profiles only (default: the config's profiles)")
    .option("--no-render", "check specs only: schema, expressions, types, references (no rendering or WGSL validation)")
    .option("--no-cache", "render and validate every shader, not taking renders and Tint verdicts kept in .kernelc-cache/ by earlier runs")
    .addOption(formatOption())
    .action(async (paths: string[], opts: LintOptions) => {
      format = opts.format;
      const { runLint } = await import("./lint-command.js");
      code = await runLint(io, paths, opts);
    });

  program
    .command("build")
    .description("compile specs and templates into per-profile bundles under out/")
    .option("--config <file>", "config file (default: kernelc.config.json if present)")
    .option("--profile <names...>", "build only these profiles (the rest of out/ is kept)")
    .option("--kernel <names...>", "validate and write only these kernels' shaders (the rest of out/ is kept)")
    .option("--out <dir>", "output folder (overrides the config)")
    .option("--check", "do not write: fail if out/ differs from a fresh build")
    .option("--force", "rebuild even when the inputs are unchanged")
    .addOption(
      new Option(
        "--emit <kind>",
        "generated modules as TypeScript (ts) or JavaScript with .d.ts declarations (js) (default: the config's emit, ts)",
      ).choices(["ts", "js"]),
    )
    .addOption(formatOption())
    .action(
      async (opts: {
        config?: string;
        profile?: string[];
        kernel?: string[];
        out?: string;
        check?: boolean;
        force?: boolean;
        emit?: "ts" | "js";
        format: Format;
      }) => {
        format = opts.format;
        const { runBuild } = await import("./build-command.js");
        code = await runBuild(io, opts);
      },
    );

  program
    .command("watch")
    .description("build, then rebuild out/ on every change to specs, templates or the config (only what the change affects)")
    .option("--config <file>", "config file (default: kernelc.config.json if present)")
    .option("--profile <names...>", "build only these profiles")
    .option("--out <dir>", "output folder (overrides the config)")
    .addOption(formatOption())
    .action(async (opts: WatchOptions) => {
      format = opts.format;
      const { runWatch } = await import("./watch-command.js");
      code = await runWatch(io, opts);
    });

  program
    .command("explain")
    .description("why each candidate of a kernel is emitted or pruned on a profile; with --call, which variant a call picks")
    .argument("<kernel>", "kernel name, e.g. PagedAttention")
    .requiredOption("--profile <name>", "profile name")
    .option("--call <file>", "a call as JSON: {inputs, outputs, attrs}")
    .option("--config <file>", "config file")
    .addOption(formatOption())
    .action(async (kernel: string, opts: { profile: string; call?: string; config?: string; format: Format }) => {
      format = opts.format;
      const { runExplain } = await import("./explain-command.js");
      code = await runExplain(io, kernel, opts);
    });

  program
    .command("tune")
    .description(
      "time the candidate tunable settings of the config's `tune` section on this machine's GPU; write the fastest to kernelc.tune.json",
    )
    .requiredOption("--profile <name>", "the profile to tune (this GPU must meet its limits and features)")
    .option("--kernel <names...>", "tune only these kernels")
    .option("--repeats <n>", "rounds of interleaved timing (default 7)")
    .option("--dawn-flag <toggles...>", "extra Dawn toggles, e.g. enable-dawn-features=vulkan_enable_f16_on_nvidia")
    .option("--config <file>", "config file")
    .addOption(formatOption())
    .action(async (opts: TuneCommandOptions) => {
      format = opts.format;
      const { runTune } = await import("./tune-command.js");
      code = await runTune(io, opts);
    });

  program
    .command("profiles")
    .description("list the device profiles (defaults plus the config's) as a table")
    .option("--config <file>", "config file")
    .option("--json", "print as JSON")
    .action(async (opts: { config?: string; json?: boolean }) => {
      const { runProfiles } = await import("./profiles-command.js");
      code = runProfiles(io, opts);
    });

  try {
    await program.parseAsync([...argv], { from: "user" });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help") return 0;
      return 2;
    }
    if (err instanceof UserError) {
      printDiagnostics(io, err.diagnostics, format, fileSources(io.cwd));
      return 1;
    }
    if (isOsError(err)) {
      printDiagnostics(io, [osErrorDiagnostic(err)], format, () => undefined);
      return 1;
    }
    io.stderr(
      `kernelc: internal error (this is a bug; please report it with the input that caused it)\n${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    return 2;
  }
}
