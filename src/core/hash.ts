import { createHash } from "node:crypto";

/** The SHA-256 of a text or bytes, as lowercase hex. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}
