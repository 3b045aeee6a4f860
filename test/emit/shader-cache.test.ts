/** What watch and compile may reuse: template closure digests, the device members a template reads, verdict keys. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { keyContext, TemplateDigests } from "../../src/emit/shader-cache.js";
import { enabledFeatures, trimTintMessage } from "../../src/emit/shader.js";

function folder(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-digests-"));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe("TemplateDigests", () => {
  const files = {
    "a.jinja": '{% include "lib/b.jinja" %}{{ device.limits.maxComputeInvocationsPerWorkgroup }}',
    "lib/b.jinja": "{% from 'lib/c.jinja' import m %}{% if device.features.subgroups %}x{% endif %}",
    "lib/c.jinja": "{% macro m() %}c{% endmacro %}",
    "other.jinja": "plain {{ device }}",
    "dyn.jinja": "{% include name %}",
  };

  it("a template's digest changes with any file it includes, transitively, and not with others", () => {
    const dir = folder(files);
    const before = new TemplateDigests(dir);
    fs.writeFileSync(path.join(dir, "other.jinja"), "changed");
    expect(new TemplateDigests(dir).digest("a.jinja")).toBe(before.digest("a.jinja"));
    fs.writeFileSync(path.join(dir, "lib/c.jinja"), "{% macro m() %}C{% endmacro %}");
    const after = new TemplateDigests(dir);
    expect(after.digest("a.jinja")).not.toBe(before.digest("a.jinja"));
    expect(after.digest("lib/b.jinja")).not.toBe(before.digest("lib/b.jinja"));
  });

  it("a template that includes by an expression depends on the whole folder", () => {
    const dir = folder(files);
    const before = new TemplateDigests(dir).digest("dyn.jinja");
    fs.writeFileSync(path.join(dir, "other.jinja"), "changed");
    expect(new TemplateDigests(dir).digest("dyn.jinja")).not.toBe(before);
    expect(new TemplateDigests(dir).deviceReads("dyn.jinja")).toBe("all");
  });

  it("reads of device members are collected over the closure; any other use of `device` means all of it", () => {
    const d = new TemplateDigests(folder(files));
    expect(d.deviceReads("a.jinja")).toEqual({ features: ["subgroups"], limits: ["maxComputeInvocationsPerWorkgroup"] });
    expect(d.deviceReads("lib/c.jinja")).toEqual({ features: [], limits: [] });
    expect(d.deviceReads("other.jinja")).toBe("all");
  });

  it("reads of tunables and dtypes members are collected over the closure; any other mention means all of them", () => {
    const d = new TemplateDigests(
      folder({
        "a.jinja": '{% include "lib/b.jinja" %}{{ tunables.WG }} {{ tunables . SPLIT }}',
        "lib/b.jinja": "{% if dtypes.query == 'f16' %}{{ dtypes.out }}{% endif %}// mytunables, tunables_x",
        "whole.jinja": "{% for k, v in tunables %}{{ k }}{% endfor %}{{ dtypes['out'] }}",
        "set.jinja": "{% set t = tunables %}{{ t.WG }}",
        "comment.jinja": "// the tunables\n{{ dtypes.out }}",
        "dyn.jinja": "{{ tunables.WG }}{% include name %}",
      }),
    );
    expect(d.contextReads("a.jinja")).toEqual({
      device: { features: [], limits: [] },
      tunables: ["SPLIT", "WG"],
      dtypes: ["out", "query"],
    });
    expect(d.contextReads("whole.jinja")).toMatchObject({ tunables: "all", dtypes: "all" });
    expect(d.contextReads("set.jinja")).toMatchObject({ tunables: "all", dtypes: [] });
    expect(d.contextReads("comment.jinja")).toMatchObject({ tunables: "all", dtypes: ["out"] });
    expect(d.contextReads("dyn.jinja")).toEqual({ device: "all", tunables: "all", dtypes: "all" });
  });

  it("the key context keeps only the device, tunables and dtypes members read", () => {
    const context = {
      n: 4,
      device: { features: { subgroups: true, "shader-f16": false }, limits: { a: 1, b: 2 } },
      tunables: { WG: 64, SPLIT: 8 },
      dtypes: { query: "f32", out: "f16" },
    };
    expect(keyContext(context, { device: { features: ["subgroups"], limits: ["b"] }, tunables: ["WG", "MISSING"], dtypes: [] })).toEqual({
      n: 4,
      device: { features: [["subgroups", true]], limits: [["b", 2]] },
      tunables: [
        ["WG", 64],
        ["MISSING", null],
      ],
      dtypes: [],
    });
    expect(keyContext(context, { device: "all", tunables: "all", dtypes: "all" })).toEqual(context);
    // Two assignments that differ only in a tunable the template does not read share the key.
    const other = { ...context, tunables: { WG: 64, SPLIT: 16 } };
    const reads = { device: "all", tunables: ["WG"], dtypes: "all" } as const;
    expect(JSON.stringify(keyContext(other, reads))).toBe(JSON.stringify(keyContext(context, reads)));
    expect(JSON.stringify(keyContext(other, { ...reads, tunables: ["SPLIT"] }))).not.toBe(
      JSON.stringify(keyContext(context, { ...reads, tunables: ["SPLIT"] })),
    );
  });
});

describe("verdict keys and Tint messages", () => {
  it("enabledFeatures maps enable directives to device feature names", () => {
    expect([...enabledFeatures("enable f16;\nenable subgroups, clip_distances;\nfn f() {}\n// enable nothing;\n")]).toEqual([
      "shader-f16",
      "subgroups",
      "clip-distances",
    ]);
    expect(enabledFeatures("fn main() {}").size).toBe(0);
  });

  it("trimTintMessage keeps the first paragraph and counts the candidates", () => {
    const tint =
      "no matching call to 'max(f32, i32)'\n\n2 candidate functions:\n • 'max(T  ✓ , T  ✗ ) -> T' where:\n      ✓  'T' is 'f32'\n";
    expect(trimTintMessage(tint)).toBe("no matching call to 'max(f32, i32)' (none of Tint's 2 candidates takes these argument types)");
    expect(trimTintMessage("unresolved value 'params'\n")).toBe("unresolved value 'params'");
  });
});
