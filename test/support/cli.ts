/** Runs the CLI in-process (src/cli/main.ts) as a test sees it: not a TTY, no environment, output collected. */
import { main } from "../../src/cli/main.js";

export async function runCli(argv: readonly string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), cwd, isTTY: false, env: {} });
  return { code, stdout, stderr };
}
