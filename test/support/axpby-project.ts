/** A throw-away copy of the axpby fixture project (test/fixtures/axpby), edited by a test: for reproductions of hostile specs and templates. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/axpby");

/** The axpby spec as plain JSON (a fresh copy each call). */
export type SpecJson = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** How to change the fixture: edit the spec, append to the template, add templates, set the config. */
export interface ProjectEdits {
  readonly spec?: (spec: SpecJson) => void;
  /** Text appended to templates/axpby.wgsl.jinja. */
  readonly appendTemplate?: string;
  /** More files under templates/, by relative path. */
  readonly templates?: Readonly<Record<string, string>>;
  /** kernelc.config.json; default `{"profiles": ["core"]}`. */
  readonly config?: object;
}

/** Writes an edited copy of the fixture into a new temporary folder and returns its root. */
export function axpbyProject(edits: ProjectEdits = {}): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-axpby-"));
  fs.mkdirSync(path.join(root, "specs"));
  fs.mkdirSync(path.join(root, "templates"));
  const spec = JSON.parse(fs.readFileSync(path.join(FIXTURE, "specs/Axpby.json"), "utf8")) as SpecJson;
  delete spec.$schema;
  edits.spec?.(spec);
  fs.writeFileSync(path.join(root, "specs/Axpby.json"), JSON.stringify(spec, null, 2));
  const template = fs.readFileSync(path.join(FIXTURE, "templates/axpby.wgsl.jinja"), "utf8") + (edits.appendTemplate ?? "");
  fs.writeFileSync(path.join(root, "templates/axpby.wgsl.jinja"), template);
  for (const [name, text] of Object.entries(edits.templates ?? {})) {
    fs.mkdirSync(path.dirname(path.join(root, "templates", name)), { recursive: true });
    fs.writeFileSync(path.join(root, "templates", name), text);
  }
  fs.writeFileSync(path.join(root, "kernelc.config.json"), JSON.stringify(edits.config ?? { profiles: ["core"] }));
  return root;
}
