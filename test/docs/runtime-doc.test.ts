/** docs/runtime.md names only functions that exist: every call it shows is a runtime export, a dispatcher export, or WebGPU / JavaScript. */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import * as runtime from "../../src/runtime/index.js";

const root = path.resolve(__dirname, "../..");

/** Functions and methods of WebGPU, Node, Dawn's `webgpu` package and JavaScript the doc may call. */
const PLATFORM = new Set([
  "requestAdapter", "requestDevice", "create", "fetch", "text", "then", "assign", "createBuffer", "writeBuffer", "mapAsync",
  "onSubmittedWorkDone", "readFile", "URL", "Error", "getMappedRange", "import", "copyBufferToBuffer", "submit", "finish", "createCommandEncoder",
]);

describe("docs/runtime.md", () => {
  const doc = fs.readFileSync(path.join(root, "docs/runtime.md"), "utf8");
  const dispatcher = fs.readFileSync(path.join(root, "src/emit/dispatcher.ts"), "utf8");
  const kernels = fs.readdirSync(path.join(root, "specs")).map((f) => (JSON.parse(fs.readFileSync(path.join(root, "specs", f), "utf8")) as { name: string }).name);

  it("every function it calls exists", () => {
    const code = [...doc.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((m) => m[1]).join("\n") + [...doc.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]).join("\n");
    const called = new Set([...code.matchAll(/(?<![\w$])(?:new\s+)?([A-Za-z_$][\w$]*)\s*\(/g)].map((m) => m[1]));
    // Spec-expression builtins the doc quotes (dim), PipelineCache / ScratchPool methods, callbacks the doc describes (a loader, an option), and test/support/gpu.ts.
    const methods = new Set(["dim", "get", "acquire", "release", "trim", "destroy", "loadShader", "timestampWrites", "getGpuDevice", "runIf", ...kernels]);
    expect(fs.readFileSync(path.join(root, "test/support/gpu.ts"), "utf8")).toContain("export async function getGpuDevice");
    const unknown = [...called].filter((name) => !(name in runtime) && !PLATFORM.has(name) && !methods.has(name) && !/^(if|for|while|return|await|function)$/.test(name));
    expect(unknown).toEqual([]);
  });

  it("names the dispatcher's exports as the generator writes them", () => {
    expect(doc).toContain("planners.PagedAttention(call)");
    expect(dispatcher).toContain("export const planners");
    expect(doc).not.toMatch(/plan[A-Z]\w+\(/);
  });
});
