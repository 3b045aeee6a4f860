/** The results of a `kernelc watch` session's rebuilds, awaited one at a time in order. */
import type { RebuildResult } from "../../src/cli/watch-command.js";

export function rebuilds(): { onRebuild: (r: RebuildResult) => void; next: () => Promise<RebuildResult> } {
  const done: RebuildResult[] = [];
  const waiting: ((r: RebuildResult) => void)[] = [];
  return {
    onRebuild: (r) => {
      const w = waiting.shift();
      if (w) w(r);
      else done.push(r);
    },
    next: () => (done.length ? Promise.resolve(done.shift()!) : new Promise((resolve) => waiting.push(resolve))),
  };
}
