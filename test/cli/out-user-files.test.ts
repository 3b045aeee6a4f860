/**
 * A user's files are not kernelc's: a full build, a partial build (--profile, --kernel), `kernelc
 * watch` and the Vite plugin's writer never delete or overwrite anything in out/ that kernelc did
 * not write. A user file, a user folder, a symbolic link, an edited generated file, a marker
 * without its build-info.json: exit 1 (a reported diagnostic in watch and Vite) naming the path,
 * and out/ byte for byte as before. A deleted generated file is restored. An interrupted in-place
 * update (watch, Vite) is still recognized as kernelc's through its pending record. Leftovers beside
 * out/ are removed only when every entry in them is provably kernelc's. The records prove nothing
 * alone: a record without the digest kernelc writes into it (an entry added by hand, the digest
 * dropped) proves nothing, even for a copy of a generated file whose mark was edited to name the
 * copy's own path; a user's file listed with its real hash in a forged build-info.json (with or
 * without the digest) or pending record lacks kernelc's generated-file mark, and a copy of a
 * generated file under another name carries a mark naming the original's path, not its own:
 * either is reported and kept. A file named like a temporary file of an update is kernelc's only
 * when the pending record lists its very content. Nor does a record make an empty folder kernelc's: kernelc removes only the folders it
 * empties of its own files.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  buildInfoDigest,
  carriesGeneratedMark,
  MARKER_TEXT,
  pendingText,
  readTreeStrict,
  updateInPlace,
} from "../../src/core/out-folder.js";
import { UserError } from "../../src/core/diagnostic.js";
import { sha256Hex } from "../../src/core/hash.js";
import { BUILD_INFO_BY, withBuildInfo } from "../../src/cli/build-info.js";
import { fillEmptyOutDir, removeProvenTree } from "../../src/cli/out-dir.js";
import { startWatch, type WatchSession } from "../../src/cli/watch-command.js";
import { rebuilds } from "../support/rebuilds.js";
import { writeOut } from "../../src/vite/write-out.js";
import kernelcVite from "../../src/vite/index.js";
import { kernelc, leftovers, makeProject, removeProjects, snapshot, touchTemplate } from "./out-project.js";

afterAll(removeProjects);

/** A project with a full build in out/ and a changed template, so that the next build would rewrite out/. */
async function built(): Promise<string> {
  const root = makeProject();
  const r = await kernelc(["build"], root);
  expect(r.code, r.stderr).toBe(0);
  touchTemplate(root, "changed");
  return root;
}

/**
 * Lists `rels` (files already in out/) in out/build-info.json with their real hashes, as someone
 * might by hand or with a script: with the digest recomputed (it is a checksum anyone can compute)
 * or with the digest field removed (as in folders written before it existed).
 */
function forgeBuildInfo(out: string, rels: readonly string[], withDigest: boolean): void {
  const infoFile = path.join(out, "build-info.json");
  const info = JSON.parse(fs.readFileSync(infoFile, "utf8")) as { inputs: string; files: Record<string, string>; digest?: string };
  for (const rel of rels) info.files[rel] = sha256Hex(fs.readFileSync(path.join(out, rel)));
  if (withDigest) info.digest = buildInfoDigest(info.inputs, info.files);
  else delete info.digest;
  fs.writeFileSync(infoFile, JSON.stringify(info, null, 2) + "\n");
}

/** Lists `rel` in out/build-info.json with `hash` (a file that is not there), the digest recomputed. */
function forgeMissing(out: string, rel: string, hash: string): void {
  const infoFile = path.join(out, "build-info.json");
  const info = JSON.parse(fs.readFileSync(infoFile, "utf8")) as { inputs: string; files: Record<string, string>; digest?: string };
  info.files[rel] = hash;
  info.digest = buildInfoDigest(info.inputs, info.files);
  fs.writeFileSync(infoFile, JSON.stringify(info, null, 2) + "\n");
}

/** The first shader file of out/, as "shaders/<id>.wgsl". */
const firstShader = (out: string): string => `shaders/${fs.readdirSync(path.join(out, "shaders")).sort()[0]!}`;

/**
 * Writes a pending record (of an in-place update) into out/ that lists `rels` with their real
 * hashes: with the digest computed as kernelc does, or without one (as by hand).
 */
function forgePending(out: string, rels: readonly string[], withDigest = true): void {
  const files = Object.fromEntries(rels.map((rel) => [rel, [sha256Hex(fs.readFileSync(path.join(out, rel)))]]));
  const by = "kernelc 0.1.0; do not edit";
  fs.writeFileSync(
    path.join(out, ".kernelc-pending.json"),
    withDigest ? pendingText(by, files) : JSON.stringify({ generatedBy: by, files }, null, 2),
  );
}

/**
 * The text of out/`from` with its generated-file mark edited to name `as` instead: a user's copy of
 * a generated file whose mark was changed by hand to name the copy's own path.
 */
function markedCopy(out: string, from: string, as: string): string {
  const text = fs.readFileSync(path.join(out, from), "utf8");
  const edited = text.replace(` as ${from} from `, ` as ${as} from `);
  expect(edited).not.toBe(text);
  return `${edited}export const mine = 1;\n`;
}

/** Something a user does to out/, what kernelc must say about it, and how to undo it. */
interface Intrusion {
  readonly name: string;
  readonly apply: (out: string) => void;
  readonly code: string;
  readonly message: RegExp;
}

const INTRUSIONS: Intrusion[] = [
  {
    name: "a user file at the top",
    apply: (out) => fs.writeFileSync(path.join(out, "mine.txt"), "mine\n"),
    code: "out_unexpected",
    message: /out\/mine\.txt \(a file\) was not written by kernelc/,
  },
  {
    name: "a user file in a generated folder",
    apply: (out) => fs.writeFileSync(path.join(out, "core/notes.md"), "my notes\n"),
    code: "out_unexpected",
    message: /out\/core\/notes\.md \(a file\) was not written by kernelc/,
  },
  {
    name: "a user folder",
    apply: (out) => {
      fs.mkdirSync(path.join(out, "mine/deep"), { recursive: true });
      fs.writeFileSync(path.join(out, "mine/deep/a.txt"), "a\n");
    },
    code: "out_unexpected",
    message: /out\/mine\/ \(folder\) was not written by kernelc/,
  },
  {
    name: "an empty user folder",
    apply: (out) => fs.mkdirSync(path.join(out, "core/empty")),
    code: "out_unexpected",
    message: /out\/core\/empty\/ \(folder\) was not written by kernelc/,
  },
  {
    name: "a symbolic link",
    apply: (out) => fs.symlinkSync("../../sentinel.txt", path.join(out, "core/link.ts")),
    code: "out_unexpected",
    message: /out\/core\/link\.ts \(symbolic link\) was not written by kernelc/,
  },
  {
    name: "a symbolic link in place of a generated file",
    apply: (out) => {
      fs.renameSync(path.join(out, "core/manifest.json"), path.join(out, "../manifest-copy.json"));
      fs.symlinkSync("../../manifest-copy.json", path.join(out, "core/manifest.json"));
    },
    code: "out_unexpected",
    message: /out\/core\/manifest\.json \(symbolic link\) was not written by kernelc/,
  },
  {
    name: "an edited generated file",
    apply: (out) => fs.appendFileSync(path.join(out, "core/dispatcher.ts"), "// my edit\n"),
    code: "out_modified",
    message: /out\/core\/dispatcher\.ts was changed after kernelc wrote it; the build would overwrite your edit/,
  },
  {
    name: "an edited shader",
    apply: (out) => {
      const shader = fs.readdirSync(path.join(out, "shaders"))[0]!;
      fs.appendFileSync(path.join(out, "shaders", shader), "// tuned by hand\n");
    },
    code: "out_modified",
    message: /out\/shaders\/[0-9a-f]{16}\.wgsl was changed after kernelc wrote it/,
  },
  {
    name: "an edited build-info.json (a file's hash rewritten to cover an edit)",
    apply: (out) => {
      const file = path.join(out, "core/dispatcher.ts");
      fs.appendFileSync(file, "export const mine = 1;\n");
      const infoFile = path.join(out, "build-info.json");
      const info = JSON.parse(fs.readFileSync(infoFile, "utf8")) as { files: Record<string, string> };
      info.files["core/dispatcher.ts"] = sha256Hex(fs.readFileSync(file));
      fs.writeFileSync(infoFile, JSON.stringify(info, null, 2) + "\n");
    },
    code: "out_modified",
    message: /out\/build-info\.json was edited after kernelc wrote it/,
  },
  {
    name: "a user file listed with its real hash in a build-info.json whose digest was removed",
    apply: (out) => {
      fs.writeFileSync(path.join(out, "core/helpers.ts"), "export const mine = 1;\n");
      forgeBuildInfo(out, ["core/helpers.ts"], false);
    },
    code: "out_unexpected",
    message:
      /out\/core\/helpers\.ts \(a file\) was not written by kernelc: out\/build-info\.json lists it with its hash, but it lacks the mark/,
  },
  {
    name: "a user file listed with its real hash in a build-info.json whose digest was recomputed",
    apply: (out) => {
      fs.mkdirSync(path.join(out, "mine"));
      fs.writeFileSync(path.join(out, "mine/notes.txt"), "my notes\n");
      fs.writeFileSync(path.join(out, "data.json"), '{ "mine": true }\n');
      forgeBuildInfo(out, ["mine/notes.txt", "data.json"], true);
    },
    code: "out_unexpected",
    message:
      /out\/data\.json \(a file\) was not written by kernelc: out\/build-info\.json lists it[^]*out\/mine\/notes\.txt \(a file\) was not written by kernelc/,
  },
  {
    name: "a generated file replaced by the user's own, its hash forged into build-info.json",
    apply: (out) => {
      fs.writeFileSync(path.join(out, "core/manifest.json"), '{ "mine": true }\n');
      forgeBuildInfo(out, ["core/manifest.json"], true);
    },
    code: "out_unexpected",
    message: /out\/core\/manifest\.json \(a file\) was not written by kernelc: out\/build-info\.json lists it/,
  },
  {
    name: "the marker's text replaced by the user's, its hash forged into build-info.json",
    apply: (out) => {
      fs.writeFileSync(path.join(out, ".kernelc-out"), "my notes\n");
      forgeBuildInfo(out, [".kernelc-out"], true);
    },
    code: "out_unexpected",
    message: /out\/\.kernelc-out \(a file\) was not written by kernelc: out\/build-info\.json lists it/,
  },
  {
    name: "a user file listed with its real hash in a forged pending record",
    apply: (out) => {
      fs.writeFileSync(path.join(out, "shaders/mine.wgsl"), "// my shader\n");
      forgePending(out, ["shaders/mine.wgsl"]);
    },
    code: "out_unexpected",
    message: /out\/shaders\/mine\.wgsl \(a file\) was not written by kernelc: out\/\.kernelc-pending\.json lists it with its hash/,
  },
  {
    name: "a generated module copied under another name, listed with its hash in a build-info.json whose digest was recomputed",
    apply: (out) => {
      fs.copyFileSync(path.join(out, "core/dispatcher.ts"), path.join(out, "core/dispatcher.mine.ts"));
      forgeBuildInfo(out, ["core/dispatcher.mine.ts"], true);
    },
    code: "out_unexpected",
    message:
      /out\/core\/dispatcher\.mine\.ts \(a file\) was not written by kernelc: out\/build-info\.json lists it with its hash, but its mark names core\/dispatcher\.ts/,
  },
  {
    name: "a generated JSON file copied into a folder of the user's, listed with its hash in a forged build-info.json",
    apply: (out) => {
      fs.mkdirSync(path.join(out, "mine"));
      fs.copyFileSync(path.join(out, "core/manifest.json"), path.join(out, "mine/manifest.json"));
      forgeBuildInfo(out, ["mine/manifest.json"], true);
    },
    code: "out_unexpected",
    message:
      /out\/mine\/manifest\.json \(a file\) was not written by kernelc: out\/build-info\.json lists it with its hash, but its mark names core\/manifest\.json/,
  },
  {
    name: "a shader copied under another shader's name, listed with its hash in a forged pending record",
    apply: (out) => {
      fs.copyFileSync(path.join(out, firstShader(out)), path.join(out, "shaders/0000000000000000.wgsl"));
      forgePending(out, ["shaders/0000000000000000.wgsl"]);
    },
    code: "out_unexpected",
    message:
      /out\/shaders\/0000000000000000\.wgsl \(a file\) was not written by kernelc: out\/\.kernelc-pending\.json lists it with its hash, but its mark names shaders\/[0-9a-f]{16}\.wgsl/,
  },
  {
    name: "a generated module copied under another name, its mark edited to name the copy, listed with its real hash in a build-info.json whose digest was removed",
    apply: (out) => {
      fs.writeFileSync(path.join(out, "core/extra.ts"), markedCopy(out, "core/dispatcher.ts", "core/extra.ts"));
      forgeBuildInfo(out, ["core/extra.ts"], false);
    },
    code: "out_modified",
    message: /out\/build-info\.json was edited after kernelc wrote it \(it has no digest/,
  },
  {
    name: "a generated module copied under another name, its mark edited to name the copy, listed with its real hash in a pending record without kernelc's digest",
    apply: (out) => {
      fs.writeFileSync(path.join(out, "core/extra.ts"), markedCopy(out, "core/dispatcher.ts", "core/extra.ts"));
      forgePending(out, ["core/extra.ts"], false);
    },
    code: "out_unexpected",
    message:
      /out\/\.kernelc-pending\.json \(a file\) was not written by kernelc[^]*out\/core\/extra\.ts \(a file\) was not written by kernelc/,
  },
  {
    name: "an empty user folder on the path of a file that a forged build-info.json lists",
    apply: (out) => {
      fs.mkdirSync(path.join(out, "mine"));
      forgeMissing(out, "mine/gone.ts", "0".repeat(64));
    },
    code: "out_unexpected",
    message: /out\/mine\/ \(empty folder\) was not written by kernelc/,
  },
  {
    name: "an empty user folder inside a generated folder, on the path of a file that a forged build-info.json lists",
    apply: (out) => {
      fs.mkdirSync(path.join(out, "core/keep"));
      forgeMissing(out, "core/keep/gone.ts", "0".repeat(64));
    },
    code: "out_unexpected",
    message: /out\/core\/keep\/ \(empty folder\) was not written by kernelc/,
  },
  {
    name: "the marker without build-info.json",
    apply: (out) => fs.rmSync(path.join(out, "build-info.json")),
    code: "out_not_ours",
    message: /out\/ holds kernelc's \.kernelc-out marker but no readable build-info\.json/,
  },
];

const BUILDS: string[][] = [["build"], ["build", "--force"], ["build", "--profile", "core"], ["build", "--kernel", "Axpby"]];

describe("a build never deletes or overwrites what kernelc did not write", () => {
  for (const intrusion of INTRUSIONS) {
    it(`${intrusion.name}: every kind of build exits 1 naming it, and the project is byte for byte as before`, async () => {
      const root = await built();
      intrusion.apply(path.join(root, "out"));
      const before = snapshot(path.dirname(root));
      for (const argv of BUILDS) {
        const r = await kernelc(argv, root);
        expect(r.code, `${argv.join(" ")}\n${r.stderr}`).toBe(1);
        expect(r.stderr).toMatch(new RegExp(`error\\[${intrusion.code}\\]`));
        expect(r.stderr, argv.join(" ")).toMatch(intrusion.message);
        expect(r.stderr).toMatch(/hint: /);
        expect(r.stderr).not.toMatch(/internal error|removed it|\n\s+at /);
        // Nothing changed, in out/ or beside it (kernelc's verdict cache aside: no compile ran).
        expect(snapshot(path.dirname(root)), argv.join(" ")).toEqual(before);
      }
      // The JSON format carries the same error.
      const json = await kernelc(["build", "--format", "json"], root);
      expect(json.code).toBe(1);
      expect(json.stdout + json.stderr).toContain(`"${intrusion.code}"`);
      expect(snapshot(path.dirname(root))).toEqual(before);
    });
  }

  it("--check does not take a user file listed in a forged build-info.json for an earlier build's, and writes nothing", async () => {
    const root = makeProject();
    expect((await kernelc(["build"], root)).code).toBe(0);
    const out = path.join(root, "out");
    fs.writeFileSync(path.join(out, "mine.ts"), "export const mine = 1;\n");
    forgeBuildInfo(out, ["mine.ts"], true);
    const before = snapshot(out);
    const r = await kernelc(["build", "--check"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[out_unexpected\]: out\/mine\.ts is not part of the build \(kernelc did not write it\)/);
    expect(r.stderr).toMatch(/hint: move it out of out\/ or delete it \(kernelc never removes what it did not write\)/);
    expect(snapshot(out)).toEqual(before);
  });

  it("--check does not take a copy of a generated file under another name, listed in a forged build-info.json, for an earlier build's", async () => {
    const root = makeProject();
    expect((await kernelc(["build"], root)).code).toBe(0);
    const out = path.join(root, "out");
    fs.copyFileSync(path.join(out, "core/kernels.json"), path.join(out, "core/kernels.old.json"));
    forgeBuildInfo(out, ["core/kernels.old.json"], true);
    const before = snapshot(out);
    const r = await kernelc(["build", "--check"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /error\[out_unexpected\]: out\/core\/kernels\.old\.json is not part of the build \(kernelc did not write it\)/,
    );
    expect(snapshot(out)).toEqual(before);
  });

  it("an empty folder left where kernelc's files were (deleted by hand) is named, with how to remove it, and kept", async () => {
    const root = await built();
    const out = path.join(root, "out");
    for (const f of fs.readdirSync(path.join(out, "compat"))) fs.rmSync(path.join(out, "compat", f));
    const r = await kernelc(["build"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[out_unexpected\]: out\/compat\/ \(empty folder\) was not written by kernelc/);
    expect(r.stderr).toMatch(/hint: kernelc removes only the folders it empties of its own files[^\n]*rmdir out\/compat/);
    expect(fs.statSync(path.join(out, "compat")).isDirectory()).toBe(true);
    fs.rmdirSync(path.join(out, "compat"));
    expect((await kernelc(["build"], root)).code).toBe(0);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  });

  it("files of an earlier kernelc, whose marks named no file, are one error saying to delete out/ and rebuild", async () => {
    const root = await built();
    const out = path.join(root, "out");
    const rels = ["core/dispatcher.ts", "core/manifest.json", "profiles.json"];
    for (const rel of rels) {
      const file = path.join(out, rel);
      fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/kernelc (\S+) as \S+ from /, "kernelc $1 from "));
    }
    forgeBuildInfo(out, rels, true);
    const before = snapshot(out);
    const r = await kernelc(["build"], root);
    expect(r.code).toBe(1);
    expect(r.stderr.match(/error\[/g)).toHaveLength(1);
    expect(r.stderr).toMatch(
      /error\[out_unexpected\]: out\/ holds 3 files \(out\/core\/dispatcher\.ts, out\/core\/manifest\.json, out\/profiles\.json\) that its records list with their hashes, but whose generated-file mark names no file/,
    );
    expect(r.stderr).toMatch(
      /hint: if out\/ was written by an earlier kernelc, move any file of yours out of it, delete out\/ yourself and rebuild/,
    );
    expect(snapshot(out)).toEqual(before);
  });

  it("once the user's file is moved out of out/, the build goes on and --check passes", async () => {
    const root = await built();
    fs.writeFileSync(path.join(root, "out/mine.txt"), "mine\n");
    expect((await kernelc(["build"], root)).code).toBe(1);
    fs.renameSync(path.join(root, "out/mine.txt"), path.join(root, "mine.txt"));
    const r = await kernelc(["build"], root);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/wrote out\//);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
    expect(fs.readFileSync(path.join(root, "mine.txt"), "utf8")).toBe("mine\n");
  });

  it("a deleted generated file is restored, by a full build and by a partial build that writes it", async () => {
    const root = await built();
    const file = path.join(root, "out/core/dispatcher.ts");
    fs.rmSync(file);
    const r = await kernelc(["build"], root);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.existsSync(file)).toBe(true);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
    fs.rmSync(file);
    fs.rmSync(path.join(root, "out/index.ts"));
    const partial = await kernelc(["build", "--profile", "core"], root);
    expect(partial.code, partial.stderr).toBe(0);
    expect(fs.existsSync(file)).toBe(true);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
    // profiles.json says which profiles a partial build keeps: without it, a partial build refuses.
    fs.rmSync(path.join(root, "out/profiles.json"));
    const refused = await kernelc(["build", "--profile", "core"], root);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/error\[out_modified\]: out\/ is not the complete build kernelc wrote \(profiles\.json is missing\)/);
    // Up to date: deleting a file makes the next build write it back, not skip.
    fs.rmSync(path.join(root, "out/compat/manifest.json"));
    expect((await kernelc(["build"], root)).stderr).toMatch(/wrote out\//);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  });

  it("a partial build writes the manifest module of every profile the index imports, also of a kept profile whose out/ folder has none (an older kernelc's)", async () => {
    const root = makeProject();
    expect((await kernelc(["build"], root)).code).toBe(0);
    const out = path.join(root, "out");
    const profiles = fs.readdirSync(out).filter((d) => fs.existsSync(path.join(out, d, "manifest.json")));
    const kept = profiles.filter((p) => p !== "core");
    expect(profiles).toContain("core");
    expect(kept.length).toBeGreaterThan(0);
    const before = Object.fromEntries(profiles.map((p) => [p, fs.readFileSync(path.join(out, p, "manifest.ts"), "utf8")]));
    // out/ as a kernelc that wrote no manifest modules left it: none on disk, none in build-info.json.
    const infoFile = path.join(out, "build-info.json");
    const info = JSON.parse(fs.readFileSync(infoFile, "utf8")) as { inputs: string; files: Record<string, string>; digest?: string };
    for (const p of profiles) {
      fs.rmSync(path.join(out, p, "manifest.ts"));
      delete info.files[`${p}/manifest.ts`];
    }
    info.digest = buildInfoDigest(info.inputs, info.files);
    fs.writeFileSync(infoFile, JSON.stringify(info, null, 2) + "\n");
    const r = await kernelc(["build", "--profile", "core"], root);
    expect(r.code, r.stderr).toBe(0);
    for (const p of profiles) expect(fs.readFileSync(path.join(out, p, "manifest.ts"), "utf8"), p).toBe(before[p]);
    for (const p of kept) expect(fs.readFileSync(path.join(out, "index.ts"), "utf8")).toContain(`import("./${p}/manifest.js")`);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  });

  it("a marker alone is kernelc's: the build replaces it", async () => {
    const root = makeProject();
    fs.mkdirSync(path.join(root, "out"));
    fs.writeFileSync(path.join(root, "out/.kernelc-out"), MARKER_TEXT);
    expect((await kernelc(["build", "--profile", "core"], root)).code).toBe(0);
    // A marker whose text is not kernelc's is the user's edit.
    fs.rmSync(path.join(root, "out"), { recursive: true });
    fs.mkdirSync(path.join(root, "out"));
    fs.writeFileSync(path.join(root, "out/.kernelc-out"), "my notes\n");
    const r = await kernelc(["build"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[out_modified\]: out\/\.kernelc-out was changed after kernelc wrote it/);
    expect(fs.readFileSync(path.join(root, "out/.kernelc-out"), "utf8")).toBe("my notes\n");
  });
});

describe("the generated-file mark", () => {
  it("every file a build writes carries it, in both emits (so the next build can tell each one from a user's)", async () => {
    const root = makeProject({ profiles: ["core", "compat"] });
    for (const emit of ["ts", "js"]) {
      const r = await kernelc(["build", "--emit", emit], root);
      expect(r.code, r.stderr).toBe(0);
      const tree = readTreeStrict(path.join(root, "out"));
      expect([...tree.files.keys()].some((rel) => rel.endsWith(emit === "ts" ? "/dispatcher.ts" : "/dispatcher.d.ts"))).toBe(true);
      for (const [rel, bytes] of tree.files) expect(carriesGeneratedMark(rel, bytes), `${emit}: ${rel}`).toBe(true);
    }
  });

  /** A module's or shader's header line naming `rel`. */
  const header = (rel: string): string => `// Generated by kernelc 0.1.0 as ${rel} from specs/A.json for profile core. Do not edit.\n`;
  /** A JSON file's text with its mark naming `rel`. */
  const json = (rel: string): string =>
    `{\n  "generatedBy": "kernelc 0.1.0 as ${rel} from specs/A.json; do not edit",\n  "shaders": {}\n}\n`;
  const rows: [string, string, boolean][] = [
    ["core/dispatcher.ts", header("core/dispatcher.ts") + "export {};\n", true],
    ["core/dispatcher.ts", "export {};\n", false],
    ["core/dispatcher.ts", "// mine\n" + header("core/dispatcher.ts"), false],
    ["core/dispatcher.ts", "// Generated by kernelc, I promise\n", false],
    ["index.d.ts", header("index.d.ts"), true],
    ["index.js", header("index.js"), true],
    ["shaders/0123456789abcdef.wgsl", header("shaders/0123456789abcdef.wgsl") + "@compute fn main() {}\n", true],
    ["shaders/0123456789abcdef.wgsl", "@compute fn main() {}\n", false],
    ["core/manifest.json", json("core/manifest.json"), true],
    // A copy under another name: its mark names the file it was copied from.
    ["core/dispatcher.mine.ts", header("core/dispatcher.ts") + "export {};\n", false],
    ["mine/dispatcher.ts", header("core/dispatcher.ts"), false],
    ["index.js", header("index.ts"), false],
    ["index.d.ts", header("index.js"), false],
    ["shaders/fedcba9876543210.wgsl", header("shaders/0123456789abcdef.wgsl"), false],
    ["mine/manifest.json", json("core/manifest.json"), false],
    ["core/kernels.json", json("core/manifest.json"), false],
    ["core/manifest.json", json("core/manifest.json").replace("core/manifest.json", "core\\/manifest.json"), false],
    // The marks of a kernelc from before marks named their file.
    ["core/dispatcher.ts", "// Generated by kernelc 0.1.0 from specs/A.json for profile core. Do not edit.\n", false],
    ["core/manifest.json", '{\n  "generatedBy": "kernelc 0.1.0 from specs/A.json; do not edit",\n  "shaders": {}\n}\n', false],
    ["core/manifest.json", '{ "generatedBy": "kernelc 0.1.0 as core/manifest.json from x" }\n', false],
    ["core/manifest.json", '{\n  "a": 1,\n  "generatedBy": "kernelc 0.1.0 as core/manifest.json from x"\n}\n', false],
    ["core/manifest.json", '{\n  "generatedBy": "me"\n}\n', false],
    [".kernelc-out", MARKER_TEXT, true],
    [".kernelc-out", "my notes\n", false],
    ["build-info.json", '{"generatedBy":"kernelc x","inputs":"h","files":{}}', true],
    ["build-info.json", '{"generatedBy":"me","inputs":"h","files":{}}', false],
    [".kernelc-pending.json", pendingText("kernelc x", { "a.ts": ["h"] }), true],
    // Without the digest that binds it, or with one that does not: a record edited by hand.
    [".kernelc-pending.json", '{"generatedBy":"kernelc x","files":{"a.ts":["h"]}}', false],
    [".kernelc-pending.json", pendingText("kernelc x", { "a.ts": ["h"] }).replace('"h"', '"g"'), false],
    [".kernelc-pending.json", "[]", false],
    ["notes.txt", header("notes.txt"), false],
    ["core/.kernelc-out", MARKER_TEXT, false],
    ["core/build-info.json", '{"generatedBy":"kernelc x","inputs":"h","files":{}}', false],
  ];
  for (const [rel, text, want] of rows)
    it(`${rel} ${JSON.stringify(text.slice(0, 40))} → ${want}`, () => {
      expect(carriesGeneratedMark(rel, Buffer.from(text, "utf8"))).toBe(want);
    });
});

describe("a huge file in out/", () => {
  it("is out_unexpected for a build and --check, kept, and never read into memory (past 2 GiB it was an internal error)", async () => {
    const root = await built();
    const big = path.join(root, "out/core/capture.bin");
    fs.writeFileSync(big, "");
    fs.truncateSync(big, 3 * 1024 ** 3); // sparse: no disk space used
    for (const argv of [["build"], ["build", "--force"], ["build", "--check"], ["build", "--profile", "core"]]) {
      const r = await kernelc(argv, root);
      expect(r.stderr, argv.join(" ")).not.toMatch(/internal error|\n\s+at /);
      expect(r.stderr, argv.join(" ")).toMatch(/error\[out_unexpected\]: out\/core\/capture\.bin \(file too large to be generated\)/);
      expect(r.code, argv.join(" ")).toBe(1);
    }
    expect(fs.statSync(big).size).toBe(3 * 1024 ** 3);
    fs.rmSync(big);
    expect((await kernelc(["build"], root)).code).toBe(0);
  });
});

describe("leftovers of interrupted builds beside out/", () => {
  it("one holding a user file (or an edited file) is kept with out_leftover; one kernelc provably wrote is removed", async () => {
    const root = await built();
    const out = path.join(root, "out");
    // A complete previous tree: provably kernelc's.
    fs.cpSync(out, path.join(root, ".out.old-1-aaaaaaaa"), { recursive: true });
    // The same with a user file added.
    fs.cpSync(out, path.join(root, ".out.old-2-bbbbbbbb"), { recursive: true });
    fs.writeFileSync(path.join(root, ".out.old-2-bbbbbbbb/mine.txt"), "user data\n");
    // The same with a generated file edited.
    fs.cpSync(out, path.join(root, ".out.tmp-3-cccccccc"), { recursive: true });
    fs.appendFileSync(path.join(root, ".out.tmp-3-cccccccc/core/dispatcher.ts"), "// edit\n");
    // A marker that is not kernelc's text, with a file: nothing proves it.
    fs.mkdirSync(path.join(root, ".out.old-4-dddddddd"));
    fs.writeFileSync(path.join(root, ".out.old-4-dddddddd/.kernelc-out"), "x");
    fs.writeFileSync(path.join(root, ".out.old-4-dddddddd/half.ts"), "x");
    // A half-removed previous tree (files gone, marker and build-info left) and an empty one: kernelc's.
    fs.cpSync(out, path.join(root, ".out.old-5-eeeeeeee"), { recursive: true });
    fs.rmSync(path.join(root, ".out.old-5-eeeeeeee/core"), { recursive: true });
    fs.mkdirSync(path.join(root, ".out.tmp-6-ffffffff"));
    const r = await kernelc(["build"], root);
    expect(r.code, r.stderr).toBe(0);
    for (const kept of [".out.old-2-bbbbbbbb", ".out.tmp-3-cccccccc", ".out.old-4-dddddddd"])
      expect(r.stderr).toMatch(new RegExp(`warning\\[out_leftover\\]: .*${kept.replaceAll(".", "\\.")} looks like a leftover`));
    expect(leftovers(root).sort()).toEqual([".out.old-2-bbbbbbbb", ".out.old-4-dddddddd", ".out.tmp-3-cccccccc"]);
    expect(fs.readFileSync(path.join(root, ".out.old-2-bbbbbbbb/mine.txt"), "utf8")).toBe("user data\n");
    expect(fs.readFileSync(path.join(root, ".out.tmp-3-cccccccc/core/dispatcher.ts"), "utf8")).toMatch(/\/\/ edit\n$/);
    expect(fs.readFileSync(path.join(root, ".out.old-4-dddddddd/half.ts"), "utf8")).toBe("x");
  });

  it("a user's copy of out/ named like a leftover (.out.old-backup, .out.tmp-mine) is not kernelc's: never removed, never restored as out/", async () => {
    const root = await built();
    const out = path.join(root, "out");
    const copies = [".out.old-backup", ".out.tmp-mine", ".out.old-2024", ".out.old-1-aaaaaaaa-mine"];
    for (const name of copies) fs.cpSync(out, path.join(root, name), { recursive: true });
    const r = await kernelc(["build"], root);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/out_leftover/);
    for (const name of copies) expect(snapshot(path.join(root, name)), name).toEqual(snapshot(path.join(root, ".out.old-backup")));
    // With out/ gone, the user's copy is not taken for a tree an interrupted build moved aside.
    fs.rmSync(out, { recursive: true });
    const again = await kernelc(["build"], root);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toMatch(/restored/);
    for (const name of copies) expect(fs.existsSync(path.join(root, name)), name).toBe(true);
  });

  it("a leftover whose build-info.json or pending record was forged to list a user file is kept, with the file", async () => {
    const root = await built();
    const out = path.join(root, "out");
    fs.cpSync(out, path.join(root, ".out.old-7-77777777"), { recursive: true });
    fs.writeFileSync(path.join(root, ".out.old-7-77777777/mine.txt"), "user data\n");
    forgeBuildInfo(path.join(root, ".out.old-7-77777777"), ["mine.txt"], true);
    fs.cpSync(out, path.join(root, ".out.tmp-8-88888888"), { recursive: true });
    fs.writeFileSync(path.join(root, ".out.tmp-8-88888888/core/mine.ts"), "export const mine = 1;\n");
    forgePending(path.join(root, ".out.tmp-8-88888888"), ["core/mine.ts"]);
    const r = await kernelc(["build"], root);
    expect(r.code, r.stderr).toBe(0);
    for (const kept of [".out.old-7-77777777", ".out.tmp-8-88888888"])
      expect(r.stderr).toMatch(new RegExp(`warning\\[out_leftover\\]: .*${kept.replaceAll(".", "\\.")} looks like a leftover`));
    expect(leftovers(root).sort()).toEqual([".out.old-7-77777777", ".out.tmp-8-88888888"]);
    expect(fs.readFileSync(path.join(root, ".out.old-7-77777777/mine.txt"), "utf8")).toBe("user data\n");
    expect(fs.readFileSync(path.join(root, ".out.tmp-8-88888888/core/mine.ts"), "utf8")).toBe("export const mine = 1;\n");
  });

  it("with out/ gone, a leftover forged to list a user file is not restored as out/", async () => {
    const root = await built();
    const out = path.join(root, "out");
    const aside = path.join(root, ".out.old-9-99999999");
    fs.renameSync(out, aside);
    fs.writeFileSync(path.join(aside, "mine.txt"), "user data\n");
    forgeBuildInfo(aside, ["mine.txt"], true);
    const r = await kernelc(["build"], root);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/restored/);
    expect(r.stderr).toMatch(/warning\[out_leftover\]: .*\.out\.old-9-99999999 looks like a leftover/);
    expect(fs.readFileSync(path.join(aside, "mine.txt"), "utf8")).toBe("user data\n");
    expect(fs.existsSync(path.join(out, "mine.txt"))).toBe(false);
  });

  it("the previous tree swapped out is removed only when it is provably kernelc's", async () => {
    const root = await built();
    const aside = path.join(root, "aside");
    fs.cpSync(path.join(root, "out"), aside, { recursive: true });
    fs.writeFileSync(path.join(aside, "core/mine.ts"), "export {};\n");
    expect(removeProvenTree(aside)).toBe(false);
    expect(fs.readFileSync(path.join(aside, "core/mine.ts"), "utf8")).toBe("export {};\n");
    // Listed with its real hash in a forged build-info.json, or in a forged pending record: still the user's.
    forgeBuildInfo(aside, ["core/mine.ts"], true);
    expect(removeProvenTree(aside)).toBe(false);
    forgeBuildInfo(aside, ["core/mine.ts"], false);
    expect(removeProvenTree(aside)).toBe(false);
    forgePending(aside, ["core/mine.ts"]);
    expect(removeProvenTree(aside)).toBe(false);
    expect(fs.readFileSync(path.join(aside, "core/mine.ts"), "utf8")).toBe("export {};\n");
    fs.rmSync(path.join(aside, "core/mine.ts"));
    // A copy of a generated file under another name, listed with its hash: its mark names the original.
    fs.copyFileSync(path.join(aside, "core/manifest.json"), path.join(aside, "core/manifest.backup.json"));
    forgeBuildInfo(aside, ["core/manifest.backup.json"], true);
    expect(removeProvenTree(aside)).toBe(false);
    forgePending(aside, ["core/manifest.backup.json"]);
    expect(removeProvenTree(aside)).toBe(false);
    expect(fs.readFileSync(path.join(aside, "core/manifest.backup.json"))).toEqual(fs.readFileSync(path.join(aside, "core/manifest.json")));
    fs.rmSync(path.join(aside, "core/manifest.backup.json"));
    fs.rmSync(path.join(aside, ".kernelc-pending.json"));
    // An empty folder of the user's on the path of a file the record lists: kernelc did not make it.
    fs.mkdirSync(path.join(aside, "core/keep"));
    forgeMissing(aside, "core/keep/gone.ts", "0".repeat(64));
    expect(removeProvenTree(aside)).toBe(false);
    expect(fs.statSync(path.join(aside, "core/keep")).isDirectory()).toBe(true);
    fs.rmdirSync(path.join(aside, "core/keep"));
    expect(removeProvenTree(aside)).toBe(true);
    expect(fs.existsSync(aside)).toBe(false);
  });
});

describe("an empty output folder of the user's, filled by a first build", () => {
  /** A file's text with kernelc's mark for `rel`. */
  const marked = (rel: string): string => `// Generated by kernelc test as ${rel} from test. Do not edit.\n`;
  /** A name valid for a file but too long for the temporary file written beside it (ENAMETOOLONG). */
  const tooLong = `${"x".repeat(240)}.ts`;

  it("a write that fails leaves the folder as it was: empty, and the same folder", () => {
    const out = path.join(makeProject(), "mine");
    fs.mkdirSync(out);
    const ino = fs.statSync(out).ino;
    const files = withBuildInfo(
      new Map([
        [".kernelc-out", MARKER_TEXT],
        ["a.ts", marked("a.ts")],
        [`z/${tooLong}`, marked(`z/${tooLong}`)],
      ]),
      "h",
    );
    expect(() => fillEmptyOutDir(out, files, BUILD_INFO_BY)).toThrow(/ENAMETOOLONG/);
    expect(fs.readdirSync(out)).toEqual([]);
    expect(fs.statSync(out).ino).toBe(ino);
  });

  it("an in-place write that fails does not leave the folders it made for the file (an empty folder is not kernelc's to the next build)", async () => {
    const root = makeProject();
    expect((await kernelc(["build"], root)).code).toBe(0);
    const out = path.join(root, "out");
    const current = readTreeStrict(out);
    const info = JSON.parse(fs.readFileSync(path.join(out, "build-info.json"), "utf8")) as { files: Record<string, string> };
    const next = new Map<string, string>();
    for (const [rel, bytes] of current.files) if (rel !== "build-info.json") next.set(rel, bytes.toString("utf8"));
    next.set(`new/deeper/${tooLong}`, marked(`new/deeper/${tooLong}`));
    expect(() => updateInPlace(out, current, withBuildInfo(next, "next"), info.files, BUILD_INFO_BY)).toThrow(/ENAMETOOLONG/);
    expect(fs.existsSync(path.join(out, "new"))).toBe(false);
    // The interrupted update is still kernelc's: the next build replaces it.
    const r = await kernelc(["build", "--force"], root);
    expect(r.code, r.stderr).toBe(0);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  });

  it("a first build interrupted while filling the folder (the marker and pending record, no build-info.json) is kernelc's to the next build", async () => {
    const root = makeProject();
    const out = path.join(root, "out");
    fs.mkdirSync(out);
    fs.writeFileSync(path.join(out, ".kernelc-out"), MARKER_TEXT);
    fs.writeFileSync(path.join(out, "index.ts"), marked("index.ts"));
    fs.writeFileSync(
      path.join(out, ".kernelc-pending.json"),
      pendingText(BUILD_INFO_BY, { ".kernelc-out": [sha256Hex(MARKER_TEXT)], "index.ts": [sha256Hex(marked("index.ts"))] }),
    );
    const r = await kernelc(["build"], root);
    expect(r.code, r.stderr).toBe(0);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
    expect(leftovers(root)).toEqual([]);
  });
});

describe("kernelc's own files and folders are still removed when a build no longer writes them", () => {
  it("a full build removes a dropped profile's folder and the shaders no longer built, leaving nothing over", async () => {
    const root = makeProject({ profiles: ["core", "compat"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    const out = path.join(root, "out");
    const shadersBefore = fs.readdirSync(path.join(out, "shaders"));
    fs.writeFileSync(path.join(root, "kernelc.config.json"), JSON.stringify({ profiles: ["core"] }));
    touchTemplate(root, "stale");
    const r = await kernelc(["build"], root);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/out_leftover|warning/);
    expect(fs.existsSync(path.join(out, "compat"))).toBe(false);
    const shadersAfter = fs.readdirSync(path.join(out, "shaders"));
    expect(shadersAfter.filter((s) => shadersBefore.includes(s))).toEqual([]);
    expect(leftovers(root)).toEqual([]);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  });

  it("an in-place update removes the files it no longer writes and the folders it emptied of them", async () => {
    const root = makeProject({ profiles: ["core", "compat"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    const out = path.join(root, "out");
    const current = readTreeStrict(out);
    const info = JSON.parse(fs.readFileSync(path.join(out, "build-info.json"), "utf8")) as { files: Record<string, string> };
    const next = new Map<string, string>();
    for (const [rel, bytes] of current.files)
      if (rel !== "build-info.json" && !rel.startsWith("compat/")) next.set(rel, bytes.toString("utf8"));
    const done = updateInPlace(out, current, withBuildInfo(next, "next"), info.files, BUILD_INFO_BY);
    expect(done.removed.filter((rel) => rel.startsWith("compat/")).length).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(out, "compat"))).toBe(false);
    expect(fs.existsSync(path.join(out, ".kernelc-pending.json"))).toBe(false);
  });
});

describe("an interrupted in-place update (kernelc watch, the Vite plugin) is still kernelc's", () => {
  it("files written under the pending record are recognized; the next build replaces them and leaves nothing over", async () => {
    const root = makeProject();
    expect((await kernelc(["build"], root)).code).toBe(0);
    const out = path.join(root, "out");
    const current = readTreeStrict(out);
    const info = JSON.parse(fs.readFileSync(path.join(out, "build-info.json"), "utf8")) as {
      inputs: string;
      files: Record<string, string>;
    };
    // The next build's files: every shader changed, plus a path that cannot be written (through a
    // file), so the update stops after the shaders, before build-info.json.
    const next = new Map<string, string>();
    for (const [rel, bytes] of current.files) if (rel !== "build-info.json") next.set(rel, bytes.toString("utf8"));
    for (const rel of [...next.keys()]) if (rel.startsWith("shaders/")) next.set(rel, `${next.get(rel)!}// new\n`);
    next.set("core/dispatcher.ts/blocked.ts", "// Generated by kernelc test as core/dispatcher.ts/blocked.ts from test. Do not edit.\n");
    expect(() => updateInPlace(out, current, withBuildInfo(next, "next"), info.files, BUILD_INFO_BY)).toThrow();
    expect(fs.existsSync(path.join(out, ".kernelc-pending.json"))).toBe(true);
    const shader = fs.readdirSync(path.join(out, "shaders"))[0]!;
    expect(fs.readFileSync(path.join(out, "shaders", shader), "utf8")).toMatch(/\/\/ new\n$/);
    // Without the pending record these shaders would be files kernelc did not write.
    const check = await kernelc(["build", "--check"], root);
    expect(check.code).toBe(1);
    // An edit on top of an interrupted update is still the user's.
    const before = snapshot(out);
    fs.appendFileSync(path.join(out, "shaders", shader), "// mine\n");
    const edited = await kernelc(["build"], root);
    expect(edited.code).toBe(1);
    expect(edited.stderr).toMatch(new RegExp(`error\\[out_modified\\]: out/shaders/${shader.replace(".", "\\.")} was changed`));
    fs.writeFileSync(path.join(out, "shaders", shader), before[`shaders/${shader}`]!);
    const r = await kernelc(["build"], root);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.existsSync(path.join(out, ".kernelc-pending.json"))).toBe(false);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
    expect(leftovers(root)).toEqual([]);
  });

  it("a temporary file of an update holding the pending content is kernelc's; one with other content, or without kernelc's mark, is not", async () => {
    const root = makeProject({ profiles: ["core"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    const out = path.join(root, "out");
    const text = "// Generated by kernelc 0.1.0 as index.ts from specs/Axpby.json: the next build of index.ts. Do not edit.\n";
    const interrupted = (tmpText: string, pendingContent = text): void => {
      fs.writeFileSync(path.join(out, ".kernelc-pending.json"), pendingText("kernelc test", { "index.ts": [sha256Hex(pendingContent)] }));
      fs.writeFileSync(path.join(out, ".index.ts.tmp-123-0123abcd"), tmpText);
    };
    interrupted(text);
    const ok = await kernelc(["build"], root);
    expect(ok.code, ok.stderr).toBe(0);
    expect(fs.existsSync(path.join(out, ".index.ts.tmp-123-0123abcd"))).toBe(false);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
    interrupted("someone's\n");
    const r = await kernelc(["build"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/out\/\.index\.ts\.tmp-123-0123abcd \(a file\) was not written by kernelc/);
    expect(fs.readFileSync(path.join(out, ".index.ts.tmp-123-0123abcd"), "utf8")).toBe("someone's\n");
    // A forged pending record that lists the user's temporary-named file's very hash.
    interrupted("someone's\n", "someone's\n");
    const forged = await kernelc(["build"], root);
    expect(forged.code).toBe(1);
    expect(forged.stderr).toMatch(/out\/\.index\.ts\.tmp-123-0123abcd \(a file\) was not written by kernelc/);
    expect(fs.readFileSync(path.join(out, ".index.ts.tmp-123-0123abcd"), "utf8")).toBe("someone's\n");
  });
  it("the next in-place update removes what an interrupted one left that it no longer writes (temporary files, files only the pending record lists)", async () => {
    const root = makeProject({ profiles: ["core"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    const out = path.join(root, "out");
    const tmpText = "// Generated by kernelc 0.1.0 as index.ts from specs/Axpby.json: an unfinished write. Do not edit.\n";
    const extra = "// Generated by kernelc 0.1.0 as core/extra.ts from specs/Axpby.json. Do not edit.\n";
    fs.writeFileSync(path.join(out, ".index.ts.tmp-123-0123abcd"), tmpText);
    fs.writeFileSync(path.join(out, "core/extra.ts"), extra);
    fs.writeFileSync(
      path.join(out, ".kernelc-pending.json"),
      pendingText(BUILD_INFO_BY, { "index.ts": [sha256Hex(tmpText)], "core/extra.ts": [sha256Hex(extra)] }),
    );
    const current = readTreeStrict(out);
    const info = JSON.parse(fs.readFileSync(path.join(out, "build-info.json"), "utf8")) as { files: Record<string, string> };
    const next = new Map<string, string>();
    for (const rel of Object.keys(info.files)) next.set(rel, current.files.get(rel)!.toString("utf8"));
    const done = updateInPlace(out, current, withBuildInfo(next, "next"), info.files, BUILD_INFO_BY);
    expect(done.removed.sort()).toEqual([".index.ts.tmp-123-0123abcd", "core/extra.ts"]);
    expect(fs.readdirSync(out).filter((n) => n.includes("tmp-") || n === ".kernelc-pending.json")).toEqual([]);
    // Nothing is left that the next build could not prove kernelc's.
    const r = await kernelc(["build"], root);
    expect(r.code, r.stderr).toBe(0);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  });

  it("a user file named like a temporary file, its mark naming the target, listed in a pending record without kernelc's digest, is kept byte for byte", async () => {
    const root = makeProject({ profiles: ["core"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    touchTemplate(root, "changed");
    const out = path.join(root, "out");
    const tmp = path.join(out, ".index.ts.tmp-123-0123abcd");
    const mine = "// Generated by kernelc 0.1.0 as index.ts from my notes. Do not edit.\nmy notes\n";
    fs.writeFileSync(tmp, mine);
    fs.writeFileSync(
      path.join(out, ".kernelc-pending.json"),
      JSON.stringify({ generatedBy: "kernelc 0.1.0; do not edit", files: { "index.ts": [sha256Hex(mine)] } }),
    );
    const before = snapshot(path.dirname(root));
    for (const argv of BUILDS) {
      const r = await kernelc(argv, root);
      expect(r.code, `${argv.join(" ")}\n${r.stderr}`).toBe(1);
      expect(r.stderr).toMatch(/error\[out_unexpected\]: out\/\.index\.ts\.tmp-123-0123abcd \(a file\) was not written by kernelc/);
      expect(r.stderr).toMatch(/error\[out_unexpected\]: out\/\.kernelc-pending\.json \(a file\) was not written by kernelc/);
      expect(snapshot(path.dirname(root))).toEqual(before);
    }
    expect(fs.readFileSync(tmp, "utf8")).toBe(mine);
  });

  it("a copy of a generated file named like a temporary file, with no pending record, is not kernelc's", async () => {
    const root = makeProject({ profiles: ["core"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    touchTemplate(root, "changed");
    const out = path.join(root, "out");
    const tmp = path.join(out, ".index.ts.tmp-123-0123abcd");
    fs.copyFileSync(path.join(out, "index.ts"), tmp);
    const before = snapshot(path.dirname(root));
    const r = await kernelc(["build"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[out_unexpected\]: out\/\.index\.ts\.tmp-123-0123abcd \(a file\) was not written by kernelc/);
    expect(snapshot(path.dirname(root))).toEqual(before);
  });
});

let session: WatchSession | undefined;
afterEach(async () => {
  await session?.close();
  session = undefined;
});

describe("kernelc watch keeps the user's files", () => {
  it("reports each intrusion as a diagnostic, keeps watching, leaves out/ as it was, and rebuilds once it is gone", async () => {
    const root = makeProject({ profiles: ["core", "compat"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    const out = path.join(root, "out");
    fs.writeFileSync(path.join(out, "mine.txt"), "mine\n");
    const log = rebuilds();
    let stderr = "";
    session = startWatch(
      { stdout: () => {}, stderr: (s) => (stderr += s), cwd: root, isTTY: false, env: {} },
      { format: "text", onRebuild: log.onRebuild, debounceMs: 20 },
    );
    const before = snapshot(out);
    expect(await log.next()).toMatchObject({ wrote: false, errors: true });
    expect(stderr).toMatch(/error\[out_unexpected\]: out\/mine\.txt \(a file\) was not written by kernelc/);
    // Not "rebuilt": the update was refused.
    expect(stderr).not.toMatch(/rebuilt in/);
    expect(stderr).toMatch(/^rebuild failed after \d+ ms \(.*\): fix the errors above; still watching$/m);
    expect(snapshot(out)).toEqual(before);

    // Gone: the next edit rebuilds.
    fs.rmSync(path.join(out, "mine.txt"));
    touchTemplate(root, "w1");
    expect(await log.next()).toMatchObject({ wrote: true, errors: false });

    // During the session (in-place updates): each intrusion is reported and kept.
    let n = 2;
    for (const intrusion of INTRUSIONS.filter((i) => i.code !== "out_not_ours")) {
      intrusion.apply(out);
      const during = snapshot(path.dirname(root));
      stderr = "";
      touchTemplate(root, `w${n++}`);
      const r = await log.next();
      expect(r, intrusion.name).toMatchObject({ wrote: false, errors: true });
      expect(stderr, intrusion.name).toMatch(new RegExp(`error\\[${intrusion.code}\\]`));
      expect(stderr, intrusion.name).toMatch(intrusion.message);
      const after = snapshot(path.dirname(root));
      delete after["proj/templates/axpby.wgsl.jinja"];
      delete during["proj/templates/axpby.wgsl.jinja"];
      delete after["proj/.kernelc-cache/tint-verdicts.json"];
      delete during["proj/.kernelc-cache/tint-verdicts.json"];
      expect(after, intrusion.name).toEqual(during);
      // Undo: a fresh project state (out/ rebuilt whole by the CLI, outside the session).
      fs.rmSync(out, { recursive: true });
      fs.rmSync(path.join(root, "manifest-copy.json"), { force: true });
      expect((await kernelc(["build"], root)).code).toBe(0);
    }
    // A deleted generated file is written back by the next update.
    fs.rmSync(path.join(out, "core/dispatcher.ts"));
    touchTemplate(root, "last");
    expect(await log.next()).toMatchObject({ wrote: true, errors: false });
    expect(fs.existsSync(path.join(out, "core/dispatcher.ts"))).toBe(true);
    await session.close();
    session = undefined;
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  }, 120_000);
});

describe("the Vite plugin keeps the user's files", () => {
  /** A generated file's text: kernelc's header line naming `rel`, then `body`. */
  const marked = (rel: string, body: string): string => `// Generated by kernelc test as ${rel} from test. Do not edit.\n${body}`;
  const files = (entries: Record<string, string>): Map<string, string> =>
    new Map(Object.entries(entries).map(([rel, body]) => [rel, marked(rel, body)]));
  const thrown = (f: () => unknown): UserError => {
    try {
      f();
    } catch (e) {
      if (e instanceof UserError) return e;
      throw e;
    }
    throw new Error("expected a UserError");
  };

  const cases: [string, (out: string) => void, string, RegExp][] = [
    ["a user file", (out) => fs.writeFileSync(path.join(out, "mine.txt"), "m"), "out_unexpected", /\/mine\.txt \(a file\) was not written/],
    [
      "a user folder",
      (out) => {
        fs.mkdirSync(path.join(out, "mine"));
        fs.writeFileSync(path.join(out, "mine/a"), "a");
      },
      "out_unexpected",
      /\/mine\/ \(folder\) was not written/,
    ],
    ["a symbolic link", (out) => fs.symlinkSync("a.ts", path.join(out, "s/link")), "out_unexpected", /\/s\/link \(symbolic link\)/],
    [
      "an edited generated file",
      (out) => fs.writeFileSync(path.join(out, "s/y.wgsl"), "edited by hand"),
      "out_modified",
      /\/s\/y\.wgsl was changed after kernelc wrote it/,
    ],
    [
      "a user file listed with its real hash in a build-info.json whose digest was removed",
      (out) => {
        fs.writeFileSync(path.join(out, "s/mine.ts"), "export const mine = 1;\n");
        forgeBuildInfo(out, ["s/mine.ts"], false);
      },
      "out_unexpected",
      /\/s\/mine\.ts \(a file\) was not written by kernelc: \S*\/build-info\.json lists it/,
    ],
    [
      "a generated file replaced by the user's own, its hash forged into build-info.json with the digest",
      (out) => {
        fs.writeFileSync(path.join(out, "s/y.wgsl"), "my shader\n");
        forgeBuildInfo(out, ["s/y.wgsl"], true);
      },
      "out_unexpected",
      /\/s\/y\.wgsl \(a file\) was not written by kernelc: \S*\/build-info\.json lists it/,
    ],
    [
      "a user file listed with its real hash in a forged pending record",
      (out) => {
        fs.writeFileSync(path.join(out, "mine.json"), '{ "mine": true }\n');
        forgePending(out, ["mine.json"]);
      },
      "out_unexpected",
      /\/mine\.json \(a file\) was not written by kernelc: \S*\/\.kernelc-pending\.json lists it/,
    ],
  ];
  for (const [name, apply, code, message] of cases) {
    it(`${name}: writeOut throws ${code} naming it and writes nothing, even for files it would not change`, () => {
      const base = makeProject();
      const out = path.join(base, "vite-out");
      writeOut(out, files({ "a.ts": "a", "s/x.wgsl": "x", "s/y.wgsl": "y" }));
      apply(out);
      const before = snapshot(out);
      for (const next of [{ "a.ts": "A", "s/y.wgsl": "Y" }, { "a.ts": "a" }, { "a.ts": "a", "s/x.wgsl": "x", "s/y.wgsl": "y" }]) {
        const err = thrown(() => writeOut(out, files(next)));
        expect(err.diagnostics.map((d) => d.code)).toContain(code);
        expect(err.diagnostics.map((d) => d.message).join("\n")).toMatch(message);
        expect(snapshot(out)).toEqual(before);
      }
    });
  }

  it("writeOut restores a deleted generated file", () => {
    const out = path.join(makeProject(), "vite-out");
    writeOut(out, files({ "a.ts": "a", "s/x.wgsl": "x", "s/y.wgsl": "y" }));
    fs.rmSync(path.join(out, "s/x.wgsl"));
    expect(writeOut(out, files({ "a.ts": "a", "s/x.wgsl": "x", "s/y.wgsl": "y" })).written).toEqual(["s/x.wgsl"]);
    expect(fs.readFileSync(path.join(out, "s/x.wgsl"), "utf8")).toBe(marked("s/x.wgsl", "x"));
    // Every file of s/ deleted: the empty folder left is not kernelc's (it removes only folders it
    // empties itself), so it is named, kept, and the files come back once it is removed.
    fs.rmSync(path.join(out, "s/x.wgsl"));
    fs.rmSync(path.join(out, "s/y.wgsl"));
    const err = thrown(() => writeOut(out, files({ "a.ts": "a", "s/x.wgsl": "x", "s/y.wgsl": "y" })));
    expect(err.diagnostics.map((d) => d.message).join("\n")).toMatch(/\/s\/ \(empty folder\) was not written by kernelc/);
    expect(err.diagnostics.map((d) => d.hint).join("\n")).toMatch(/rmdir \S*\/s\b/);
    expect(fs.readdirSync(path.join(out, "s"))).toEqual([]);
    fs.rmdirSync(path.join(out, "s"));
    expect(writeOut(out, files({ "a.ts": "a", "s/x.wgsl": "x", "s/y.wgsl": "y" })).written).toEqual(["s/x.wgsl", "s/y.wgsl"]);
  });

  it("writeOut refuses, as a bug, to write a file without kernelc's mark (it could not tell it from a user's later)", () => {
    const out = path.join(makeProject(), "vite-out");
    expect(() => writeOut(out, new Map([["a.ts", "export {};\n"]]))).toThrow(/without its generated-file mark .*: a\.ts/);
    expect(fs.existsSync(out)).toBe(false);
  });

  it("the plugin reports a user file listed in a forged build-info.json (the overlay in dev, a failed vite build) and keeps it", async () => {
    const root = makeProject({ profiles: ["core"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    fs.writeFileSync(path.join(root, "out/mine.ts"), "export const mine = 1;\n");
    forgeBuildInfo(path.join(root, "out"), ["mine.ts"], false);
    touchTemplate(root, "vite-forged");
    const before = snapshot(path.join(root, "out"));
    const plugin = kernelcVite();
    const hook = (name: string) => (plugin as unknown as Record<string, (this: unknown, ...a: unknown[]) => unknown>)[name]!;
    hook("configResolved").call(plugin, { root, command: "build" });
    const errors: string[] = [];
    await hook("buildStart").call({ error: (m: string) => errors.push(m), warn: () => {} });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /error\[out_unexpected\]: out\/mine\.ts \(a file\) was not written by kernelc: out\/build-info\.json lists it/,
    );
    expect(snapshot(path.join(root, "out"))).toEqual(before);
  });

  it("the plugin reports a user file in out/ (the overlay in dev, a failed vite build) and keeps it", async () => {
    const root = makeProject({ profiles: ["core"] });
    expect((await kernelc(["build"], root)).code).toBe(0);
    fs.writeFileSync(path.join(root, "out/mine.txt"), "mine\n");
    const before = snapshot(path.join(root, "out"));
    const plugin = kernelcVite();
    const hook = (name: string) => (plugin as unknown as Record<string, (this: unknown, ...a: unknown[]) => unknown>)[name]!;
    hook("configResolved").call(plugin, { root, command: "build" });
    const errors: string[] = [];
    await hook("buildStart").call({ error: (m: string) => errors.push(m), warn: () => {} });
    expect(errors).toHaveLength(1);
    // The folder as the project names it, not an absolute path.
    expect(errors[0]).toMatch(/error\[out_unexpected\]: out\/mine\.txt \(a file\) was not written by kernelc/);
    expect(snapshot(path.join(root, "out"))).toEqual(before);
  });
});
