/** kernelc's version, stamped into generated files and hashed into build-info (keep in step with package.json). */
export const KERNELC_VERSION = "0.1.0";

/**
 * The command a generated module's header names to regenerate it: the build of its language,
 * whatever the config's `emit` (a header that depended on how the build was run would make out/
 * differ between equivalent builds; one without `--emit` was wrong after `build --emit js`).
 */
export function regenerateCommand(emit: "ts" | "js"): string {
  return `npx kernelc build --emit ${emit}`;
}
