/**
 * The precompiled spec-schema validator (src/load/spec-schema-check.generated.ts, written by
 * scripts/gen-spec-validator.mjs): it is current with schema/kernel-spec.schema.json, and it gives
 * the same verdict as Ajv's compilation of the schema on every spec of the repository, the lint
 * corpus and the test fixtures (valid and invalid ones).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parseJson, toPlain } from "../../src/core/json-source.js";
import { validate as precompiled } from "../../src/load/spec-schema-check.generated.js";
import { specCheckModule } from "../../scripts/gen-spec-validator.mjs";

const root = path.resolve(__dirname, "../..");
const schemaText = fs.readFileSync(path.join(root, "schema/kernel-spec.schema.json"), "utf8");

/** Every .json file under `dir` (recursively). */
function jsonFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...jsonFiles(p));
    else if (e.isFile() && e.name.endsWith(".json")) out.push(p);
  }
  return out;
}

describe("the precompiled spec-schema validator", () => {
  it("is generated from the current schema (rerun `node scripts/gen-spec-validator.mjs` after editing it)", () => {
    const current = fs.readFileSync(path.join(root, "src/load/spec-schema-check.generated.ts"), "utf8");
    expect(current === specCheckModule(schemaText), "src/load/spec-schema-check.generated.ts is stale").toBe(true);
  });

  it("agrees with Ajv on every spec of the repository, the lint corpus and the fixtures", () => {
    const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true });
    const full = ajv.compile(JSON.parse(schemaText));
    const files = [
      ...jsonFiles(path.join(root, "specs")),
      ...jsonFiles(path.join(root, "test/lint/corpus")),
      ...jsonFiles(path.join(root, "test/fixtures")),
    ].filter((f) => !f.endsWith("kernelc.config.json"));
    let valid = 0;
    let invalid = 0;
    for (const file of files) {
      const parsed = parseJson(fs.readFileSync(file, "utf8"), file);
      if (!parsed.root) continue;
      const plain = toPlain(parsed.root);
      const verdict = full(plain) === true;
      expect(precompiled(plain) === true, path.relative(root, file)).toBe(verdict);
      if (verdict) valid++;
      else invalid++;
    }
    expect(valid).toBeGreaterThanOrEqual(2);
    expect(invalid).toBeGreaterThanOrEqual(10);
  });
});
