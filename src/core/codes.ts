/**
 * Every diagnostic code kernelc emits, in one table. Codes are stable snake_case identifiers:
 * tools and tests match on them, so a code is never renamed or reused for another meaning.
 * Add a row here before emitting a new code; `makeDiagnostic` only accepts codes of this table.
 */
import type { Diagnostic, DiagnosticNote, Location, Severity } from "./diagnostic.js";

interface CodeInfo {
  readonly severity: Severity;
  /** One-line description; docs/diagnostics.md gives each code its meaning (test/docs/docs.test.ts checks both list the same codes). */
  readonly summary: string;
}

export const CODES = {
  // load: files, JSON, schema
  file_unreadable: {
    severity: "error",
    summary: "A spec file or folder, the config or the tune file could not be read, or is not a regular file (a FIFO, a device).",
  },
  no_specs: {
    severity: "error",
    summary: "The specs folder or the paths given hold no spec file (*.json): there is nothing to lint or build.",
  },
  file_too_large: {
    severity: "error",
    summary: "A spec file, the config, the tune file or a pass's shader template exceeds the size limit (4 MiB).",
  },
  json_syntax: { severity: "error", summary: "The file is not valid JSON." },
  json_too_deep: { severity: "error", summary: "JSON nesting exceeds the depth limit." },
  json_duplicate_key: { severity: "error", summary: "A JSON object has the same key twice." },
  json_forbidden_key: { severity: "error", summary: "A JSON key such as __proto__ that could pollute objects." },
  schema_unknown_field: { severity: "error", summary: "A field the spec format does not define." },
  schema_missing_field: { severity: "error", summary: "A required field is missing." },
  schema_type: { severity: "error", summary: "A field has the wrong JSON type." },
  schema_value: { severity: "error", summary: "A field's value is not allowed (enum, pattern, range)." },
  schema_other: { severity: "error", summary: "Another JSON Schema violation." },
  // parse: expressions
  expr_syntax: { severity: "error", summary: "An expression cannot be parsed." },
  expr_too_deep: { severity: "error", summary: "An expression nests deeper than the limit." },
  expr_too_long: { severity: "error", summary: "An expression is longer than the limit." },
  // check: names, types, references
  unknown_name: { severity: "error", summary: "An expression names something that does not exist." },
  reserved_name: {
    severity: "error",
    summary:
      "A derive entry is named like a namespace, a builtin function, a word of the language or a name templates are given, which it would hide; or a binding or uniform field name is a WGSL keyword, reserved word or predeclared type.",
  },
  unknown_member: { severity: "error", summary: "Member access outside a namespace's members." },
  forbidden_member: { severity: "error", summary: "Member access to a name reserved by JavaScript (constructor, __proto__, …)." },
  unknown_function: { severity: "error", summary: "A call to a function that is not a builtin." },
  wrong_arity: { severity: "error", summary: "A builtin called with the wrong number of arguments." },
  type_mismatch: { severity: "error", summary: "An operand or argument has the wrong type." },
  not_callable: { severity: "error", summary: "A call of something that is not a function." },
  derive_cycle: { severity: "error", summary: "Derive entries depend on each other in a cycle." },
  derive_too_deep: {
    severity: "error",
    summary: "A derive entry nests deeper than the limit (a very long chain of entries reading each other).",
  },
  unknown_derive: { severity: "error", summary: "The spec's `explain` list names a derive entry the spec does not define." },
  unknown_tensor: { severity: "error", summary: "A reference to an input or output the spec does not declare." },
  unknown_attribute: { severity: "error", summary: "A reference to an undeclared attribute." },
  unknown_tunable: { severity: "error", summary: "A reference to an undeclared tunable: in a spec, or a pin in the config." },
  unknown_limit: { severity: "error", summary: "A reference to a device limit WebGPU does not define." },
  unknown_type_param: { severity: "error", summary: "A reference to an undeclared type constraint." },
  unknown_binding: { severity: "error", summary: "A pass names a binding that is not declared." },
  unknown_intermediate: { severity: "error", summary: "A scratch binding names an undeclared intermediate." },
  bad_derive_ref: { severity: "error", summary: "A `$name` reference to a derive entry that does not exist or is not a string." },
  duplicate_id: { severity: "error", summary: "Two variants, passes, intermediates or bindings share an id." },
  duplicate_binding_name: {
    severity: "error",
    summary: "Two bindings of one pass have the same WGSL name, or one has the name of a uniform binding's struct type.",
  },
  uniform_out_of_range: {
    severity: "error",
    summary: "A uniform field's value is known without a call and is outside its type's range (u32, i32, or a finite f32).",
  },
  dispatch_out_of_range: {
    severity: "error",
    summary: "A workgroup count is known without a call and is negative, or above the profile's maxComputeWorkgroupsPerDimension.",
  },
  non_finite_value: { severity: "error", summary: "A constant sub-expression evaluates to infinity or NaN (such as `1e300 * 1e300`)." },
  expr_always_fails: {
    severity: "error",
    summary:
      "A sub-expression fails whenever it is evaluated (such as `ceilDiv(n, 0)`), so every call that evaluates it would be rejected; a warning where it sits in a branch only some calls evaluate.",
  },
  condition_not_bool: { severity: "error", summary: "A `when` condition is not boolean." },
  shader_missing: { severity: "error", summary: "A pass's shader template does not exist under templates/." },
  shader_unsafe_path: {
    severity: "error",
    summary: "A shader path escapes templates/ (.. above it, absolute path, symlink out) or has a .., . or empty segment (not normalized).",
  },
  bad_wgsl_type: { severity: "error", summary: "An element type is not a WGSL type kernelc can bind." },
  bool_element_type: {
    severity: "error",
    summary:
      "A binding of a bool tensor declares an element type other than u32 (bool tensors are bound as u32 words, 4 elements per word).",
  },
  element_type_mismatch: {
    severity: "error",
    summary:
      "A tensor or scratch binding declares an element type whose scalar is not the tensor's dtype (an `f32` view of a float16 tensor).",
  },
  bad_type_constraint: {
    severity: "error",
    summary: "A type constraint, an intermediate or an input's `storage` names an ONNX type kernelc does not support.",
  },
  unused_derive: {
    severity: "warning",
    summary: "A derive entry (of the kernel, a variant or a pass) that nothing the kernel uses reads, or that every reader overrides.",
  },
  unused_tunable: { severity: "warning", summary: "A tunable that nothing the kernel uses reads." },
  unused_attribute: {
    severity: "warning",
    summary:
      "An attribute that nothing the kernel uses reads, so a call's value of it changes nothing (unless its constraint allows one value only).",
  },
  unused_intermediate: {
    severity: "warning",
    summary: "A variant's intermediate that no pass of the variant binds, allocated for nothing.",
  },
  // plan / emit
  config_invalid: {
    severity: "error",
    summary: "kernelc.config.json is invalid, or its specs or templates folder lies outside the project and the repository it is in.",
  },
  profile_invalid: { severity: "error", summary: "A device profile is invalid." },
  unknown_profile: { severity: "error", summary: "A profile name that is not defined." },
  too_many_candidates: {
    severity: "error",
    summary: "A kernel has more candidate combinations on a profile than the configured cap (maxCandidates).",
  },
  no_variant_for_profile: { severity: "warning", summary: "A kernel has no variant that can run on a profile." },
  eval_error: { severity: "error", summary: "An expression failed while being evaluated for the build." },
  template_error: { severity: "error", summary: "A template failed to render, or uses something the template sandbox refuses." },
  wgsl_value_invalid: {
    severity: "error",
    summary: "A spec value a template reads is not a finite number, a boolean, or a WGSL identifier or type name.",
  },
  template_limit_exceeded: {
    severity: "error",
    summary: "Rendering a template went past a render limit (loop steps, output size, nesting, time).",
  },
  wgsl_invalid: { severity: "error", summary: "Emitted WGSL fails validation by Tint." },
  wgsl_limit_exceeded: { severity: "error", summary: "A shader exceeds its profile's workgroup limits." },
  f16_unavailable: {
    severity: "error",
    summary:
      "A shader uses f16 where it cannot have it: the profile lacks shader-f16 (f16 data is packed in u32 there), or no f16 binding or requirement enables it.",
  },
  binding_unused: { severity: "warning", summary: "A pass binding that the rendered shader never declares or never uses." },
  output_unbound: {
    severity: "warning",
    summary:
      "A variant none of whose passes binds an output (an optional one: unless its conditions exclude calls that give it), so the output is never written.",
  },
  binding_optional_unguarded: {
    severity: "warning",
    summary:
      "A pass binds an optional input or output that no `when` condition of its variant or kernel requires, so calls without it fail at plan time.",
  },
  no_instances: {
    severity: "warning",
    summary: "A kernel whose templates read per-model values has no configured instance, so those shaders were not built.",
  },
  instance_invalid: { severity: "error", summary: "A configured instance does not fit the kernel." },
  out_stale: { severity: "error", summary: "`build --check` found out/ differs from a fresh build." },
  out_unsafe: {
    severity: "error",
    summary: "The output folder is the project root, contains it, lies outside it, or overlaps specs/, templates/, .git or node_modules.",
  },
  out_not_ours: {
    severity: "error",
    summary:
      "The output folder exists and was not written by kernelc (no .kernelc-out marker and no matching build-info.json, or the marker without a readable build-info.json).",
  },
  out_unexpected: {
    severity: "error",
    summary:
      "out/ holds a file, folder, symbolic link or special file that kernelc did not write: the build stops and changes nothing (`build --check` reports it too).",
  },
  out_modified: {
    severity: "error",
    summary:
      "A file kernelc wrote in out/ (or its build-info.json) was changed since: the build stops rather than overwrite the edit; a partial build also refuses an out/ that is not the complete build kernelc wrote.",
  },
  out_emit_mixed: {
    severity: "error",
    summary: "A build of some profiles or kernels would leave out/ with both TypeScript and JavaScript modules.",
  },
  out_locked: { severity: "error", summary: "Another kernelc build holds the output folder's lock." },
  out_leftover: {
    severity: "warning",
    summary: "A leftover folder of an interrupted build beside out/ holding entries kernelc cannot prove it wrote; it is left in place.",
  },
  os_error: {
    severity: "error",
    summary: "The operating system refused a file operation (disk full, permission denied, read-only filesystem, …).",
  },
  unknown_kernel: { severity: "error", summary: "`build --kernel` names a kernel that no spec defines." },
  // tune
  tune_file_invalid: { severity: "error", summary: "kernelc.tune.json is not a tune file kernelc wrote." },
  tune_unavailable: { severity: "error", summary: "`kernelc tune` has nothing to measure or no adapter to measure on." },
  tune_call_invalid: { severity: "error", summary: "A call shape of the config's `tune` section is not a valid call of its kernel." },
  tune_rule_invalid: {
    severity: "error",
    summary: "A per-call tuned rule (kernelc.tune.json perCall, or the config's tune.<kernel>.by) cannot apply to its kernel.",
  },
  call_invalid: {
    severity: "error",
    summary:
      "A call given to `explain --call` (or explain()'s `call`) is not a valid call of its kernel: its form, a tensor, a dtype, a shape or an attribute.",
  },
  call_rejected: {
    severity: "error",
    summary:
      "A valid call that the kernel cannot plan on the profile: no variant accepts it, or a kernel condition or a planned value fails.",
  },
  usage: { severity: "error", summary: "The command line, or an argument of the programmatic API, is wrong." },
  init_file_exists: { severity: "error", summary: "`kernelc init` would overwrite a file that already exists." },
} as const satisfies Record<string, CodeInfo>;

export type Code = keyof typeof CODES;

/** Builds a Diagnostic with the table's severity for `code`. */
export function makeDiagnostic(
  code: Code,
  message: string,
  location?: Location,
  extra?: { hint?: string; notes?: readonly DiagnosticNote[]; severity?: Severity },
): Diagnostic {
  return {
    code,
    severity: extra?.severity ?? CODES[code].severity,
    message,
    location,
    hint: extra?.hint,
    notes: extra?.notes ?? [],
  };
}
