/** A progress line on a TTY for commands longer than a second; silent in CI or when piped. */
import type { Io } from "./io.js";

/** Shows the latest step on one rewritten line of stderr. */
export class Progress {
  private readonly start = Date.now();
  private last = "";
  private shown = false;
  constructor(private readonly io: Io) {}
  /** Shows `text` (after the first second, on a TTY outside CI). */
  update(text: string): void {
    if (!this.io.isTTY || this.io.env.CI === "true" || Date.now() - this.start < 1000) return;
    if (text === this.last) return;
    this.last = text;
    this.shown = true;
    this.io.stderr(`\r\x1b[K${text}`);
  }
  /** Clears the line. */
  done(): void {
    if (this.shown) this.io.stderr("\r\x1b[K");
  }
}
