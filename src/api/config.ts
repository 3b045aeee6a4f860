/** Loading a project's config for the commands and the programmatic API. */
import * as fs from "node:fs";
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { hasErrors, UserError } from "../core/diagnostic.js";
import { loadConfig, parseConfig, type LoadedConfig } from "../plan/config.js";

/**
 * Loads the config file `configPath` (relative to `cwd`), or `cwd`'s kernelc.config.json, or the
 * defaults. The project root is the config file's folder. Throws UserError with the config's
 * diagnostics when it is invalid.
 */
export function loadProjectConfig(cwd: string, configPath?: string): LoadedConfig {
  let loaded: LoadedConfig;
  if (configPath) {
    const file = path.resolve(cwd, configPath);
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (err) {
      throw new UserError([
        makeDiagnostic(
          "file_unreadable",
          `cannot read the config file: ${(err as Error).message}`,
          { file },
          { hint: "check the --config path" },
        ),
      ]);
    }
    loaded = parseConfig(text, file, path.dirname(file));
  } else {
    loaded = loadConfig(cwd);
  }
  if (hasErrors(loaded.diagnostics)) throw new UserError(loaded.diagnostics);
  return loaded;
}
