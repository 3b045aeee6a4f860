/** `kernelc profiles`. */
import { loadProjectConfig } from "../api/config.js";
import { formatProfilesTable, resolveProfile } from "../plan/profiles.js";
import type { Io } from "./io.js";

/** Prints the device profiles (defaults plus the config's) as a table or JSON. */
export function runProfiles(io: Io, opts: { config?: string; json?: boolean }): number {
  const loaded = loadProjectConfig(io.cwd, opts.config);
  if (opts.json) {
    const rows = loaded.allProfiles.map((p) => ({ name: p.name, features: p.features, limits: resolveProfile(p) }));
    io.stdout(JSON.stringify(rows, null, 2) + "\n");
  } else {
    io.stdout(formatProfilesTable(loaded.allProfiles));
  }
  return 0;
}
