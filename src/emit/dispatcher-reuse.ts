/**
 * A profile's dispatcher, generated once per enumeration for every shader id assignment (kernelc
 * watch). A template edit changes shader texts, hence their ids (content hashes), and nothing
 * else a dispatcher is generated from; generating a dispatcher is the largest cost of a rebuild.
 * So the dispatcher is generated with placeholders where the shader ids go, kept, and filled in
 * with each rebuild's ids while the models it was generated from are unchanged: the same
 * enumerations (the same objects, which compile() reuses only while the spec, the config and what
 * the templates read are unchanged) with the same shader tables up to the ids themselves.
 *
 * Why the text is the same as generateDispatcher's with the ids: the generator uses a shader id
 * only as a quoted string (`str`), compared for equality (shared functions, pooled strings), never
 * by its characters or order; a placeholder has an id's length, and distinct ids get distinct
 * placeholders. A placeholder is a private-use character (PLACEHOLDER_MARK) and fifteen digits;
 * the mark occurs in no text the models come from (checked by the caller: dispatcherInputsAllowReuse),
 * so each occurrence in the generated text is a placeholder.
 */
import type { KernelModel, PassModel } from "../plan/dispatch-model.js";
import { generateDispatcher, type GeneratedModule } from "./dispatcher.js";

/** The character that starts a placeholder: U+E000, the first of Unicode's private use area. */
const PLACEHOLDER_MARK = "\uE000";
const PLACEHOLDER = /\uE000(\d{15})/g;
/** The mark itself, or a JSON escape that makes it. */
const MARK_IN_SOURCE = /\uE000|\\u[eE]000/;

/** A dispatcher generated with placeholders, and what it was generated from. */
export interface ReusableDispatcher {
  /** The enumerations of the profile's kernels (by identity), in order. */
  readonly builds: readonly object[];
  /** The header and language of the module, and the shader tables with placeholder numbers for ids. */
  readonly shape: string;
  readonly module: GeneratedModule;
}

/**
 * Whether the texts the models of a compilation come from (the spec files', the config's and the
 * tune file's, and the module header) are free of the placeholder mark, so that a dispatcher can be
 * generated with placeholders.
 */
export function dispatcherInputsAllowReuse(texts: Iterable<string | undefined>): boolean {
  for (const t of texts) if (t !== undefined && MARK_IN_SOURCE.test(t)) return false;
  return true;
}

/**
 * generateDispatcher(models, header, profile), taken from `kept` when that was generated from the
 * same enumerations (`builds`, one per model) and shader tables up to the ids; otherwise generated
 * with placeholders and returned with the entry to keep for the next rebuild.
 */
export function reuseDispatcher(
  kept: ReusableDispatcher | undefined,
  builds: readonly object[],
  models: readonly KernelModel[],
  header: string,
  profile: string,
): { module: GeneratedModule; keep: ReusableDispatcher } {
  const ids: string[] = [];
  const numbers = new Map<string, number>();
  const placeholderOf = (id: string): string => {
    let n = numbers.get(id);
    if (n === undefined) {
      if (id.length !== 16) throw new Error(`internal error: shader id ${JSON.stringify(id)} is not 16 characters long`);
      numbers.set(id, (n = ids.length));
      ids.push(id);
    }
    return PLACEHOLDER_MARK + String(n).padStart(15, "0");
  };
  const placeheld = models.map((m): KernelModel => ({
    ...m,
    assignments: m.assignments.map((a) => ({
      ...a,
      variants: a.variants.map((v) => ({
        ...v,
        passes: v.passes.map((p): PassModel => ({ ...p, shaders: new Map([...p.shaders].map(([key, id]) => [key, placeholderOf(id)])) })),
      })),
    })),
  }));
  const shape = JSON.stringify([
    header,
    profile,
    placeheld.map((m) => m.assignments.map((a) => a.variants.map((v) => v.passes.map((p) => [...p.shaders])))),
  ]);
  const same =
    kept !== undefined && kept.shape === shape && kept.builds.length === builds.length && kept.builds.every((b, i) => b === builds[i]);
  const keep = same ? kept : { builds, shape, module: generateDispatcher(placeheld, header, profile) };
  const fill = (text: string): string => text.replace(PLACEHOLDER, (_, n: string) => ids[Number(n)]!);
  return { module: { marked: fill(keep.module.marked), declarations: fill(keep.module.declarations) }, keep };
}
