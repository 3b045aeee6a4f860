/**
 * WebGPU flag values, fixed by the WebGPU specification. The runtime uses these numbers instead of
 * the GPUBufferUsage / GPUShaderStage / GPUMapMode globals, which Node's `webgpu` package does not
 * install on globalThis.
 */

/** GPUBufferUsage flags. */
export const BufferUsage = {
  MAP_READ: 0x0001,
  MAP_WRITE: 0x0002,
  COPY_SRC: 0x0004,
  COPY_DST: 0x0008,
  INDEX: 0x0010,
  VERTEX: 0x0020,
  UNIFORM: 0x0040,
  STORAGE: 0x0080,
  INDIRECT: 0x0100,
  QUERY_RESOLVE: 0x0200,
} as const;

/** GPUShaderStage flags. */
export const ShaderStage = {
  VERTEX: 0x1,
  FRAGMENT: 0x2,
  COMPUTE: 0x4,
} as const;

/** GPUMapMode flags. */
export const MapMode = {
  READ: 0x0001,
  WRITE: 0x0002,
} as const;
