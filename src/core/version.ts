/** kernelc's version, stamped into generated files and hashed into build-info (keep in step with package.json). */
export const KERNELC_VERSION = "0.1.0";

/** The command generated files name to regenerate them, unless the build was given other options. */
export const REGENERATE_COMMAND = "npx kernelc build";
