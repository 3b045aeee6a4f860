/** What a planner did with a call, as comparable JSON: the plan (uniform bytes as arrays) or the error's kind and message. */
export type Outcome = { plan: unknown } | { error: { kind: string; message: string } };

function normalize(plan: unknown): unknown {
  return JSON.parse(JSON.stringify(plan, (_k, v: unknown) => (v instanceof Uint8Array ? Array.from(v) : v)));
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
