/**
 * A real browser for tests: Debian's Chromium (installed by scripts/setup-chromium.sh, never
 * downloaded by Playwright) driven by playwright-core, with WebGPU on SwiftShader, and a static
 * file server on 127.0.0.1 that also holds the tensors a test sends to the page and the ones the
 * page sends back.
 *
 * Environment:
 * - KERNELC_CHROMIUM: the browser binary (default /usr/bin/chromium).
 * - CI=true: a missing browser or WebGPU adapter fails the run instead of skipping the test.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { chromium, type Browser } from "playwright-core";

/** The Chromium binary the browser tests use. */
export const CHROMIUM = process.env.KERNELC_CHROMIUM || "/usr/bin/chromium";

/**
 * Chromium's flags for WebGPU without a GPU: the SwiftShader adapter (Vulkan in software), so the
 * test sees what a CI browser (and a user without a supported GPU) gets.
 */
export const CHROMIUM_FLAGS: readonly string[] = [
  "--headless=new",
  "--no-sandbox",
  "--enable-unsafe-webgpu",
  "--enable-features=Vulkan",
  "--use-webgpu-adapter=swiftshader",
];

/** Says why the browser test cannot run: throws under CI=true, else prints the reason and returns undefined. */
export function browserUnavailable(reason: string): undefined {
  const message = `browser test: ${reason}`;
  if (process.env.CI === "true") throw new Error(`${message} (CI=true: the browser test must run)`);
  console.warn(`${message}; skipping the browser test`);
  return undefined;
}

/** Launches Chromium with CHROMIUM_FLAGS, or returns undefined (see browserUnavailable) when the binary is missing. */
export async function launchChromium(): Promise<Browser | undefined> {
  if (!existsSync(CHROMIUM)) {
    return browserUnavailable(`${CHROMIUM} does not exist (run: bash scripts/setup-chromium.sh, or set KERNELC_CHROMIUM)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_FLAGS], timeout: 60_000 });
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".wgsl": "text/plain; charset=utf-8",
  ".css": "text/css",
};

/** A server on 127.0.0.1 (ephemeral port): GET serves `root` and `data`; PUT /result/<key> stores the body in `results`. */
export interface TestServer {
  readonly url: string;
  /** Bytes served at `/data/<key>`. */
  readonly data: Map<string, Uint8Array>;
  /** Bodies received by `PUT /result/<key>`. */
  readonly results: Map<string, Buffer>;
  close(): Promise<void>;
}

export async function serve(root: string): Promise<TestServer> {
  const data = new Map<string, Uint8Array>();
  const results = new Map<string, Buffer>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const pathname = decodeURIComponent(url.pathname);
    const fail = (status: number, text: string): void => {
      res.writeHead(status, { "content-type": "text/plain" });
      res.end(text);
    };
    if (req.method === "PUT" && pathname.startsWith("/result/")) {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        results.set(pathname.slice("/result/".length), Buffer.concat(chunks));
        res.writeHead(204);
        res.end();
      });
      return;
    }
    if (req.method !== "GET") return fail(405, `${req.method} not allowed`);
    if (pathname === "/favicon.ico") {
      res.writeHead(204);
      res.end();
      return;
    }
    if (pathname.startsWith("/data/")) {
      const bytes = data.get(pathname.slice("/data/".length));
      if (!bytes) return fail(404, `no data ${pathname}`);
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": bytes.byteLength });
      res.end(bytes);
      return;
    }
    const file = path.join(root, pathname === "/" ? "index.html" : pathname);
    if (!file.startsWith(root + path.sep) || !existsSync(file) || !statSync(file).isFile()) return fail(404, `not found: ${pathname}`);
    res.writeHead(200, { "content-type": CONTENT_TYPES[path.extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    data,
    results,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
