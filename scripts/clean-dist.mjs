// Removes dist/ before `npm pack` compiles it afresh, so no stale module (or one whose source
// was deleted) is published. dist/ is tsc's output folder; nothing else is written there.
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

rmSync(fileURLToPath(new URL("../dist", import.meta.url)), { recursive: true, force: true });
