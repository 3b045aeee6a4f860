/** Loading a project's config for the commands and the programmatic API. */
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { hasErrors, UserError } from "../core/diagnostic.js";
import { DEFAULT_JSON_LIMITS } from "../core/json-source.js";
import { InputFileError, readFailure, readInputFile } from "../core/read-file.js";
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
      // Never readFileSync: a FIFO would hang, /dev/zero fill the memory.
      text = readInputFile(file, DEFAULT_JSON_LIMITS.maxBytes);
    } catch (err) {
      const tooLarge = err instanceof InputFileError && err.reason === "too_large";
      throw new UserError([
        makeDiagnostic(
          tooLarge ? "file_too_large" : "file_unreadable",
          `cannot read the config file ${file}: ${readFailure(err)}`,
          { file },
          { hint: "check the --config path (relative to the current folder): it names a kernelc.config.json of at most 4 MiB" },
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
