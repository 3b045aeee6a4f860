/**
 * The strict consumer's TypeScript options that generated modules must compile under with zero
 * errors (issue 12: `strict` plus the flags create-vite and strict projects turn on), and a helper
 * that type-checks files with them. Module NodeNext; a test that also needs other module settings
 * (MODULE_SETTINGS) spreads these options and overrides `module`/`moduleResolution`. The library is
 * ES2020's, the oldest docs/runtime.md promises (generated code calls no newer library function).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";

/** The strictness flags alone, as they read in a tsconfig.json too (test/package/tarball.test.ts writes one). */
export const STRICT_FLAGS = {
  strict: true,
  noUnusedLocals: true,
  noUnusedParameters: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  noPropertyAccessFromIndexSignature: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  noImplicitOverride: true,
  noImplicitReturns: true,
  noFallthroughCasesInSwitch: true,
  erasableSyntaxOnly: true,
  allowUnreachableCode: false,
  allowUnusedLabels: false,
  noUncheckedSideEffectImports: true,
} as const;

export const STRICT_CONSUMER: ts.CompilerOptions = {
  ...STRICT_FLAGS,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  lib: ["lib.es2020.d.ts"],
  types: [],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
};

/**
 * The module / moduleResolution pairs of the ES module projects that generated code must compile in
 * (docs/api.md, "Consumer TypeScript settings"): bundler resolution with every ES module target
 * (create-vite's esnext, older templates' es2020 and es2022, `preserve`), and Node's (`tsc --init`'s
 * nodenext; node16, node18 and node20 of @tsconfig/node* presets). CommonJS (`commonjs` + node10)
 * is not among them: the bundle is ES modules (its shader URLs are `import.meta.url`'s).
 */
export const MODULE_SETTINGS: readonly {
  readonly name: string;
  readonly module: ts.ModuleKind;
  readonly moduleResolution: ts.ModuleResolutionKind;
}[] = [
  { name: "es2020 + bundler", module: ts.ModuleKind.ES2020, moduleResolution: ts.ModuleResolutionKind.Bundler },
  { name: "es2022 + bundler", module: ts.ModuleKind.ES2022, moduleResolution: ts.ModuleResolutionKind.Bundler },
  { name: "esnext + bundler", module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler },
  { name: "preserve + bundler", module: ts.ModuleKind.Preserve, moduleResolution: ts.ModuleResolutionKind.Bundler },
  { name: "node16 + node16", module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16 },
  { name: "node18 + node16", module: ts.ModuleKind.Node18, moduleResolution: ts.ModuleResolutionKind.Node16 },
  { name: "node20 + nodenext", module: ts.ModuleKind.Node20, moduleResolution: ts.ModuleResolutionKind.NodeNext },
  { name: "nodenext + nodenext", module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext },
];

/** The diagnostics of type-checking `roots` with `options`, as "file:position: message" lines (file relative to `dir`). */
export function typeErrors(roots: readonly string[], options: ts.CompilerOptions = STRICT_CONSUMER, dir?: string): string[] {
  return ts
    .getPreEmitDiagnostics(ts.createProgram([...roots], options))
    .map(
      (d) =>
        `${d.file ? (dir ? path.relative(dir, d.file.fileName) : path.basename(d.file.fileName)) : ""}:${d.start ?? ""}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`,
    );
}

/** Writes a generated dispatcher (`source`) to `<dir>/core/dispatcher.ts` and returns its type errors under STRICT_CONSUMER. */
export function dispatcherTypeErrors(dir: string, source: string): string[] {
  const file = path.join(dir, "core/dispatcher.ts");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, source);
  return typeErrors([file], STRICT_CONSUMER, dir);
}
