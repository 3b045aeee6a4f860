/**
 * A WGSL validation worker (started by WgslValidator in validate-wgsl.ts): its own Dawn null
 * backend, answering each request { id, wgsl, features, withFacts } with Tint's problems (and the
 * shader's workgroup facts when asked), as TintSession finds them.
 */
import { parentPort } from "node:worker_threads";
import { TintSession, type WorkerAnswer, type WorkerRequest } from "./validate-wgsl.js";

const port = parentPort;
if (!port) throw new Error("validate-worker.js runs as a worker thread of WgslValidator");
const session = await TintSession.create();
const answer = (m: WorkerAnswer): void => port.postMessage(m);
// Requests are validated one at a time, in the order they came, each claimed only when its turn
// comes: the requesting thread can take those still waiting (WgslValidator.help). (One at a time
// costs no throughput: Tint's work is synchronous in this thread either way.)
const waiting: WorkerRequest[] = [];
let running = false;
async function work(): Promise<void> {
  running = true;
  for (let req = waiting.shift(); req; req = waiting.shift()) {
    if (Atomics.compareExchange(new Int32Array(req.claim), 0, 0, 1) !== 0) {
      answer({ id: req.id, skipped: true });
      continue;
    }
    try {
      const { problems, facts } = await session.check(req.wgsl, req.features, req.withFacts);
      answer({ id: req.id, problems, ...(facts ? { facts } : {}) });
    } catch (err) {
      answer({ id: req.id, error: err instanceof Error ? err.message : String(err) });
    }
  }
  running = false;
}
port.on("message", (req: WorkerRequest) => {
  waiting.push(req);
  if (!running) void work();
});
answer({ ready: true, features: session.supportedFeatures() });
