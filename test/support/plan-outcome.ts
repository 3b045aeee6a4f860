/** What a planner did with a call, as comparable JSON: the plan (uniforms as their u32 words) or the error's kind and message. */
export type Outcome = { plan: unknown } | { error: { kind: string; message: string } };

function normalize(plan: unknown): unknown {
  return JSON.parse(JSON.stringify(plan));
}

/** Runs a planner; a KernelCallError becomes an outcome, any other error is rethrown (a bug). */
export function outcome(f: () => unknown): Outcome {
  try {
    return { plan: normalize(f()) };
  } catch (err) {
    const e = err as { name?: string; kind?: string; message?: string };
    if (e.name !== "KernelCallError") throw err;
    return { error: { kind: e.kind ?? "?", message: e.message ?? "" } };
  }
}
