/**
 * Template paths as the spec check and the loader read them: which segments are refused and why
 * (a `..` above the folder leaves it; `..`, `.` or empty segments inside it are refused with the
 * path to write instead), and the did-you-mean for a template that does not exist, against the
 * repository's templates/.
 */
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { templateGuess, templateSegmentsProblem } from "../../src/check/template-path.js";

const TEMPLATES = path.resolve(__dirname, "../../templates");

describe("templateSegmentsProblem", () => {
  it("accepts a plain path", () => {
    expect(templateSegmentsProblem("lib/row.wgsl.jinja")).toBeUndefined();
    expect(templateSegmentsProblem("x..y.jinja")).toBeUndefined();
  });

  it("refuses a `..` that climbs above the folder as leaving it, even one that comes back", () => {
    for (const p of ["../x.jinja", "lib/../../x.jinja", "lib/../../templates/x.jinja", ".."])
      expect(templateSegmentsProblem(p), p).toBe("leaves the templates folder through `..`");
  });

  it("refuses `..`, `.` and empty segments inside the folder for what they are, with the path to write", () => {
    const why = "which a template path may not have (it is taken as written, not normalized)";
    expect(templateSegmentsProblem("lib/../x.jinja")).toBe(`has \`..\` segments, ${why}: write \`x.jinja\``);
    expect(templateSegmentsProblem("a/./b/../c.jinja")).toBe(`has \`..\` segments, ${why}: write \`a/c.jinja\``);
    expect(templateSegmentsProblem("./x.jinja")).toBe(`has \`.\` or empty segments, ${why}: write \`x.jinja\``);
    expect(templateSegmentsProblem("lib//x.jinja")).toBe(`has \`.\` or empty segments, ${why}: write \`lib/x.jinja\``);
    expect(templateSegmentsProblem("lib/..")).toBe(`has \`..\` segments, ${why}, and names the templates folder itself, not a template`);
  });
});

describe("templateGuess", () => {
  it("names the closest template for a misspelt name", () => {
    expect(templateGuess(TEMPLATES, "paged-atention-row.wgsl.jinja")).toBe("did you mean `paged-attention-row.wgsl.jinja`?");
    expect(templateGuess(TEMPLATES, "lib/constant.wgsl.jinja")).toBe("did you mean `lib/constants.wgsl.jinja`?");
  });

  it("names the template of that file name in a folder for a bare name", () => {
    expect(templateGuess(TEMPLATES, "row.wgsl.jinja")).toBe("did you mean `lib/row.wgsl.jinja`?");
    expect(templateGuess(TEMPLATES, "splitk-merge.wgsl.jinja")).toBe("did you mean `lib/splitk-merge.wgsl.jinja`?");
  });

  it("gives nothing for a name close to no template, or a folder that does not exist", () => {
    expect(templateGuess(TEMPLATES, "softmax.wgsl.jinja")).toBeUndefined();
    expect(templateGuess(path.join(TEMPLATES, "nope"), "row.wgsl.jinja")).toBeUndefined();
  });
});
