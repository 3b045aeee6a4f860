/** The build, explain and profiles commands. */
import * as fs from "node:fs";
import * as path from "node:path";
import { loadConfig, parseConfig, type LoadedConfig } from "../plan/config.js";
import { formatProfilesTable, resolveProfile } from "../plan/profiles.js";
import { hasErrors } from "../diagnostics/diagnostic.js";
import { makeDiagnostic } from "../diagnostics/codes.js";
import { UserError } from "../diagnostics/diagnostic.js";
import type { Format, Io } from "./main.js";

/** Loads the config named by --config, or the project's kernelc.config.json, or the defaults. */
export function loadProjectConfig(io: Io, configPath: string | undefined): LoadedConfig {
  let loaded: LoadedConfig;
  if (configPath) {
    const file = path.resolve(io.cwd, configPath);
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (err) {
      throw new UserError([makeDiagnostic("file_unreadable", `cannot read the config file: ${(err as Error).message}`, { file }, { hint: "check the --config path" })]);
    }
    loaded = parseConfig(text, file, path.dirname(file));
  } else {
    loaded = loadConfig(io.cwd);
  }
  if (hasErrors(loaded.diagnostics)) throw new UserError(loaded.diagnostics);
  return loaded;
}

/** `kernelc profiles`. */
export function runProfiles(io: Io, opts: { config?: string; json?: boolean }): number {
  const loaded = loadProjectConfig(io, opts.config);
  if (opts.json) {
    const rows = loaded.allProfiles.map((p) => ({ name: p.name, features: p.features, limits: resolveProfile(p) }));
    io.stdout(JSON.stringify(rows, null, 2) + "\n");
  } else {
    io.stdout(formatProfilesTable(loaded.allProfiles));
  }
  return 0;
}

export { runBuild, runExplain } from "../emit/build.js";
export type { Format };
