/**
 * The kernelc runtime: what a user of a generated bundle imports to run its plans on a WebGPU device.
 * It depends on nothing but the WebGPU API (types only), so it runs in browsers and in Node.
 */
export type * from "../model/plan.js";
export * from "./device.js";
export * from "./execute.js";
export * from "./f16.js";
export * from "./gpu-constants.js";
export * from "./pipeline-cache.js";
export * from "./scratch-pool.js";
