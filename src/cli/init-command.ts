/**
 * `kernelc init [dir]`: starts a project with a config, an example spec, its template and an example
 * call, each commented. It never overwrites a file: when any of them exists it writes nothing and
 * reports each one.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { UserError } from "../core/diagnostic.js";
import { CONFIG_FILE } from "../plan/config.js";
import type { Io } from "./io.js";

const CONFIG = `{
  "$comment": [
    "kernelc's project config (docs/config.md in the kernelc package).",
    "specs: the folder of kernel specs (*.json); templates: the folder of WGSL templates (*.wgsl.jinja);",
    "out: where \`kernelc build\` writes the bundle (shaders, per-profile dispatchers and manifests, index.ts).",
    "profiles: the device profiles to build, most demanding first (\`kernelc profiles\` lists them)."
  ],
  "specs": "specs",
  "templates": "templates",
  "out": "out",
  "profiles": ["desktop-32k", "core"]
}
`;

const SPEC = `{
  "$schema": "../node_modules/kernelc/schema/kernel-spec.schema.json",
  "$comment": [
    "An example kernel: y = alpha * x + beta over a vector (docs/spec-format.md in the kernelc package).",
    "inputs/outputs: the tensors of a call by id; shapes.<id> and tensorDtypes.<id> read them in expressions.",
    "typeConstraints: the element types each type parameter may take; dtypes.T is the WGSL type of T.",
    "tunables: build-time knobs: \`default\`, then \`values\` as fallbacks in order; each profile builds the first value",
    "some variant survives with (here WG = 64 where the \`wgFits\` condition prunes 256, e.g. on the compat profile).",
    "derive: named values computed from the call, the tunables and device.limits; templates read them by name.",
    "bindings: the buffers a pass binds; variants: the ways to compute the kernel, the highest usable priority wins.",
    "A call reaches a variant only when all its \`when\` conditions hold; \`kernelc explain\` shows why one was picked."
  ],
  "domain": "com.example",
  "name": "Axpby",
  "sinceVersion": 1,
  "inputs": {
    "xT": { "onnx": "x", "dtype": "T", "rank": 1 }
  },
  "outputs": {
    "yT": { "onnx": "y", "dtype": "T", "rank": 1, "shape": "shapes.xT" }
  },
  "attributes": { "alpha": { "default": 1.0 }, "beta": { "default": 0.0 } },
  "typeConstraints": { "T": ["float32"] },
  "tunables": {
    "WG": { "default": 256, "values": [64] }
  },
  "derive": {
    "n": "dim(shapes.xT, 0)",
    "scalar": "dtypes.T",
    "groups": "ceilDiv(n, tunables.WG)",
    "wgFits": "tunables.WG <= device.limits.maxComputeInvocationsPerWorkgroup",
    "sameIo": "sameShape(shapes.yT, shapes.xT) and tensorDtypes.yT == tensorDtypes.xT",
    "dispatchFits": "groups <= device.limits.maxComputeWorkgroupsPerDimension"
  },
  "when": ["sameIo"],
  "bindings": {
    "x": { "arg": "xT", "elementType": "$scalar" },
    "y": { "arg": "yT", "elementType": "$scalar" },
    "params": {
      "struct": [
        { "name": "n", "type": "u32", "value": "n" },
        { "name": "alpha", "type": "f32", "value": "attrs.alpha" },
        { "name": "beta", "type": "f32", "value": "attrs.beta" }
      ]
    }
  },
  "variants": [
    {
      "id": "scalar",
      "when": ["wgFits", "dispatchFits"],
      "passes": [
        {
          "id": "main",
          "name": "Axpby.Scalar",
          "shader": "axpby.wgsl.jinja",
          "bindings": ["x", "y", "params"],
          "dispatch": { "x": "groups" }
        }
      ]
    }
  ]
}
`;

const TEMPLATE = `{#
  The WGSL template of the Axpby example (docs/templates.md in the kernelc package).
  It sees the spec's derive values by name (scalar, n, ...) and its tunables (tunables.WG), and
  env.wgsl.resourceDeclarations declares the pass's bindings (x, y and the params uniform) with the
  types the spec gives them.
  kernelc renders it once per shader the profiles need and validates the WGSL with Tint.
#}
{{ env.wgsl.resourceDeclarations }}

// y = alpha * x + beta, one element of {{ scalar }} per invocation.
const WORKGROUP_SIZE = {{ tunables.WG }}u;

@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  {# The last workgroup may run past n: those invocations write nothing. #}
  if (i >= params.n) {
    return;
  }
  y[i] = x[i] * params.alpha + params.beta;
}
`;

const CALL = `{
  "$comment": [
    "An example call of Axpby, as a dispatcher's planners.Axpby(call) takes it:",
    "tensors by spec id with shape and ONNX dtype, and attribute values.",
    "Try: npx kernelc explain Axpby --profile core --call calls/axpby.json"
  ],
  "inputs": { "xT": { "shape": [1000], "dtype": "float32" } },
  "outputs": { "yT": { "shape": [1000], "dtype": "float32" } },
  "attrs": { "alpha": 2, "beta": 0.5 }
}
`;

/** The files `kernelc init` writes, relative to the project folder. */
export const INIT_FILES: ReadonlyMap<string, string> = new Map([
  [CONFIG_FILE, CONFIG],
  ["specs/Axpby.json", SPEC],
  ["templates/axpby.wgsl.jinja", TEMPLATE],
  ["calls/axpby.json", CALL],
]);

/** `kernelc init [dir]`: writes the starter files into `dir` (created if missing), never over an existing one. */
export function runInit(io: Io, dir: string | undefined): number {
  const root = path.resolve(io.cwd, dir ?? ".");
  const shown = (rel: string): string => path.relative(io.cwd, path.join(root, rel)).split(path.sep).join("/") || rel;
  const parents = new Set([...INIT_FILES.keys()].map((rel) => path.dirname(rel)).filter((d) => d !== "."));
  const blocked = [...parents].filter(
    (d) => isSymlink(path.join(root, d)) || (fs.existsSync(path.join(root, d)) && !fs.statSync(path.join(root, d)).isDirectory()),
  );
  if (isSymlink(root) || (fs.existsSync(root) && !fs.statSync(root).isDirectory())) blocked.unshift(".");
  if (blocked.length > 0) {
    throw new UserError(
      blocked.map((rel) =>
        makeDiagnostic(
          "init_file_exists",
          `\`${shown(rel)}\` exists and is not a folder kernelc init can write into`,
          { file: path.join(root, rel) },
          { hint: "run kernelc init in an empty or new folder (`kernelc init my-kernels`)" },
        ),
      ),
    );
  }
  const existing = [...INIT_FILES.keys()].filter((rel) => fs.existsSync(path.join(root, rel)) || isSymlink(path.join(root, rel)));
  if (existing.length > 0) {
    throw new UserError(
      existing.map((rel) =>
        makeDiagnostic(
          "init_file_exists",
          `\`${shown(rel)}\` already exists; kernelc init never overwrites a file`,
          { file: path.join(root, rel) },
          { hint: "run kernelc init in an empty or new folder (`kernelc init my-kernels`), or move the file away" },
        ),
      ),
    );
  }
  for (const [rel, text] of INIT_FILES) {
    const file = path.join(root, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text, { flag: "wx" });
  }
  const where = path.relative(io.cwd, root);
  io.stderr(
    `created ${[...INIT_FILES.keys()].map(shown).join(", ")}\n` +
      "next:\n" +
      (where ? `  cd ${where}\n` : "") +
      "  npx kernelc lint                      # check the spec\n" +
      "  npx kernelc build                     # write out/: shaders, dispatchers, manifests, index.ts\n" +
      "  npx kernelc explain Axpby --profile core --call calls/axpby.json\n",
  );
  return 0;
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}
