/** A small spec for check tests, and helpers that load and check it with one expression swapped in. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { checkKernel } from "../../src/check/check-spec.js";
import { type CheckResult } from "../../src/model/checked.js";
import { showType } from "../../src/model/types.js";
import type { Diagnostic } from "../../src/core/diagnostic.js";
import { makeCheckContext } from "../../src/api/lint.js";
import { loadSpecFile } from "../../src/load/load-spec.js";

/** The spec: two inputs (one optional), typed and untyped attributes, a tunable, a few derive entries. */
export function probeSpec(): Record<string, any> {
  return {
    domain: "test",
    name: "Probe",
    sinceVersion: 1,
    inputs: { x: { onnx: "X", dtype: "T", rank: 2 }, bias: { onnx: "B", dtype: "T", optional: true } },
    outputs: { y: { onnx: "Y", dtype: "T", shape: "shapes.x" } },
    attributes: {
      axis: { default: 1 },
      mode: { default: "linear" },
      pads: { default: [0, 0] },
      alpha: { default: 0.5 },
      scale: {},
      kind: {},
    },
    attributeConstraints: { kind: { values: ["a", "b"] } },
    typeConstraints: { T: ["float16", "float32"] },
    tunables: { WG: { default: 64 } },
    derive: { rows: "dim(shapes.x, 0)", half: "rows / 2", ratio: "1.5", flag: "present.bias" },
    variants: [{ id: "v", passes: [{ id: "p", name: "P", shader: "probe.wgsl.jinja", bindings: [], dispatch: { x: "1" } }] }],
  };
}

let emptyTemplates: string | undefined;
/** A templates folder with no templates (every shader is missing, so unused warnings are off). */
export function emptyTemplatesDir(): string {
  emptyTemplates ??= fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-check-"));
  return emptyTemplates;
}

/** Loads and checks a spec object; throws when loading fails (the test's spec is wrong). */
export function checkSpecObject(spec: unknown, templatesDir = emptyTemplatesDir()): CheckResult & { text: string } {
  const text = JSON.stringify(spec, null, 2);
  const loaded = loadSpecFile("probe.json", text);
  if (!loaded.spec) throw new Error(`the test spec does not load: ${loaded.diagnostics.map((d) => d.message).join("; ")}`);
  return { ...checkKernel(loaded.spec, makeCheckContext(templatesDir)), text };
}

/** A diagnostic as a test reads it: code, message, hint, and the spec text it points at. */
export interface Found {
  readonly code: string;
  readonly message: string;
  readonly hint?: string;
  readonly at?: string;
}

export function found(d: Diagnostic, text: string): Found {
  const s = d.location?.span;
  return { code: d.code, message: d.message, hint: d.hint, at: s ? text.slice(s.start, s.end) : undefined };
}

/** Checks `expr` as the derive entry `probe`: its type and the problems reported for it. */
export function probe(expr: string): { type: string; problems: Found[] } {
  const spec = probeSpec();
  spec.derive.probe = expr;
  const r = checkSpecObject(spec);
  const d = r.kernel!.derive.get("probe")!;
  const problems = r.diagnostics.filter((x) => x.location?.pointer === "/derive/probe").map((x) => found(x, r.text));
  return { type: showType(d.type), problems };
}
