/**
 * The one-pass kernel most dispatcher tests build around their spec: a single variant `main` whose
 * pass binds `x`, `y` and `params` and dispatches `n` invocations, and a template whose invocations
 * below `params.n` each run a few lines of WGSL.
 */

/** A spec's `variants`: one variant `main`, one pass `main` of `name` rendering `shader` over x, y and params. */
export function onePassVariants(name: string, shader: string) {
  return [{ id: "main", passes: [{ id: "main", name, shader, bindings: ["x", "y", "params"], dispatch: { x: "n" } }] }];
}

/** A template that declares the pass's resources and runs `body` (WGSL statements) for each `gid.x < params.n`. */
export function perElementShader(...body: string[]): string {
  return [
    "{{ env.wgsl.resourceDeclarations }}",
    "",
    "@compute @workgroup_size(1)",
    "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
    "  if (gid.x < params.n) {",
    ...body.map((line) => `    ${line}`),
    "  }",
    "}",
    "",
  ].join("\n");
}
