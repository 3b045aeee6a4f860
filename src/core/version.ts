/** kernelc's version, stamped into generated files and hashed into build-info (keep in step with package.json). */
export const KERNELC_VERSION = "0.1.0";
