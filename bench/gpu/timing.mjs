// Helpers the GPU benchmarks share (bench/gpu/attention.mjs, bench/gpu/paged-read.mjs).

/** The median of a list of numbers (the upper one of an even count). */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** 0..n-1 in random order (a block table whose blocks lie anywhere in the cache). */
export function shuffled(n) {
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

/**
 * A timestamp query set of `count` entries and `read(n)`, which resolves the first n and returns
 * them as numbers (nanoseconds).
 */
export function timestamps(device, count) {
  const MAP_READ = 1,
    COPY_SRC = 4,
    COPY_DST = 8,
    QUERY_RESOLVE = 0x200;
  const querySet = device.createQuerySet({ type: "timestamp", count });
  const resolveBuf = device.createBuffer({ size: count * 8, usage: QUERY_RESOLVE | COPY_SRC });
  const readBuf = device.createBuffer({ size: count * 8, usage: MAP_READ | COPY_DST });
  async function read(n) {
    const enc = device.createCommandEncoder();
    enc.resolveQuerySet(querySet, 0, n, resolveBuf, 0);
    enc.copyBufferToBuffer(resolveBuf, 0, readBuf, 0, n * 8);
    device.queue.submit([enc.finish()]);
    await readBuf.mapAsync(MAP_READ);
    const t = new BigInt64Array(readBuf.getMappedRange().slice(0, n * 8));
    readBuf.unmap();
    return [...t].map(Number);
  }
  return { querySet, read };
}
