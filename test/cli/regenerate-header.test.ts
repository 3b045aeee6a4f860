/**
 * The generated modules' headers say how to regenerate them: `npx kernelc build`, plus the
 * `--config` and an `--emit` other than the config's that the build was given (following a plain
 * `npx kernelc build` after `build --emit js` would write TypeScript instead), for a full build and
 * for the bundle index a partial build rewrites.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { kernelc, makeProject, removeProjects } from "./out-project.js";

afterAll(removeProjects);

const secondLine = (file: string): string => fs.readFileSync(file, "utf8").split("\n")[1]!;

describe("the regenerate line of generated headers", () => {
  it("is the plain command for a plain build", async () => {
    const root = makeProject({ profiles: ["core"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    expect(secondLine(path.join(root, "out/core/dispatcher.ts"))).toBe("// Regenerate with `npx kernelc build`.");
    expect(secondLine(path.join(root, "out/index.ts"))).toBe("// Regenerate with `npx kernelc build`.");
  });

  it("names --emit js when the config says ts, and not when the config says js", async () => {
    const root = makeProject({ profiles: ["core"] });
    expect((await kernelc(["build", "--emit", "js"], root)).code).toBe(0);
    for (const f of ["out/core/dispatcher.js", "out/core/dispatcher.d.ts", "out/index.js", "out/index.d.ts"])
      expect(secondLine(path.join(root, f)), f).toBe("// Regenerate with `npx kernelc build --emit js`.");
    const js = makeProject({ profiles: ["core"], emit: "js" });
    expect((await kernelc(["build", "--emit", "js"], js)).code).toBe(0);
    expect(secondLine(path.join(js, "out/core/dispatcher.js"))).toBe("// Regenerate with `npx kernelc build`.");
    expect((await kernelc(["build", "--emit", "ts", "--force"], js)).code).toBe(0);
    expect(secondLine(path.join(js, "out/core/dispatcher.ts"))).toBe("// Regenerate with `npx kernelc build --emit ts`.");
  });

  it("names the config file given, quoted for a shell when it needs it, in a partial build's index too", async () => {
    const root = makeProject();
    fs.writeFileSync(path.join(root, "my config.json"), JSON.stringify({ profiles: ["core", "compat"] }));
    expect((await kernelc(["build", "--config", "my config.json"], root)).code).toBe(0);
    const line = "// Regenerate with `npx kernelc build --config 'my config.json'`.";
    expect(secondLine(path.join(root, "out/compat/dispatcher.ts"))).toBe(line);
    expect(secondLine(path.join(root, "out/index.ts"))).toBe(line);
    expect((await kernelc(["build", "--config", "my config.json", "--profile", "core", "--force"], root)).code).toBe(0);
    expect(secondLine(path.join(root, "out/index.ts"))).toBe(line);
  });
});
