import { escapeInvisibleJson } from "./invisible-text.js";

/**
 * Stable JSON: object keys sorted, two-space indent, trailing newline (byte-deterministic output),
 * bidirectional, invisible and control characters of strings as `\uXXXX` (core/invisible-text.ts).
 */
export function stableJson(value: unknown): string {
  const norm = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(norm);
    if (v && typeof v === "object" && !(v instanceof Uint8Array)) {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) out[k] = norm((v as Record<string, unknown>)[k]);
      return out;
    }
    return v;
  };
  return escapeInvisibleJson(JSON.stringify(norm(value), null, 2)) + "\n";
}
