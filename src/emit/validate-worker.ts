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
port.on("message", (req: WorkerRequest) => {
  session.check(req.wgsl, req.features, req.withFacts).then(
    ({ problems, facts }) => answer({ id: req.id, problems, ...(facts ? { facts } : {}) }),
    (err: unknown) => answer({ id: req.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
answer({ ready: true, features: session.supportedFeatures() });
