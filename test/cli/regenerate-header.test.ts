/**
 * The generated modules' headers say how to regenerate them: the build of their language
 * (`npx kernelc build --emit ts` or `--emit js`), right whatever the config's `emit` says (a plain
 * `npx kernelc build` after `build --emit js` would write TypeScript instead), and the same for
 * equivalent builds, so `build --check` compares only what the build makes: a full build, and the
 * bundle index a partial build rewrites.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { kernelc, makeProject, removeProjects } from "./out-project.js";

afterAll(removeProjects);

const secondLine = (file: string): string => fs.readFileSync(file, "utf8").split("\n")[1]!;

describe("the regenerate line of generated headers", () => {
  it("names the language the modules are in, whatever the config says", async () => {
    const root = makeProject({ profiles: ["core", "compat"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    expect(secondLine(path.join(root, "out/core/dispatcher.ts"))).toBe("// Regenerate with `npx kernelc build --emit ts`.");
    expect(secondLine(path.join(root, "out/core/manifest.ts"))).toBe("// Regenerate with `npx kernelc build --emit ts`.");
    expect(secondLine(path.join(root, "out/index.ts"))).toBe("// Regenerate with `npx kernelc build --emit ts`.");
    expect((await kernelc(["build", "--emit", "js"], root)).code).toBe(0);
    const js = ["dispatcher.js", "dispatcher.d.ts", "manifest.js", "manifest.d.ts"].map((f) => `out/core/${f}`);
    for (const f of [...js, "out/index.js", "out/index.d.ts"])
      expect(secondLine(path.join(root, f)), f).toBe("// Regenerate with `npx kernelc build --emit js`.");
    // The same build from a config that says js: out/ is what it makes.
    fs.writeFileSync(path.join(root, "kernelc.config.json"), JSON.stringify({ profiles: ["core", "compat"], emit: "js" }));
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
    expect((await kernelc(["build", "--profile", "core", "--force"], root)).code).toBe(0);
    expect(secondLine(path.join(root, "out/index.js"))).toBe("// Regenerate with `npx kernelc build --emit js`.");
  });
});
