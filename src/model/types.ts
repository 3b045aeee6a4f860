/**
 * Static types of the expression language.
 *
 * `int` and `float` are distinct: `/` on two ints is floor division. `number` is the type of an
 * attribute whose kind the spec does not fix: its values are ints when integral at run time.
 * A shape is `list<int>`.
 */
export type Type =
  | { readonly k: "int" }
  | { readonly k: "float" }
  | { readonly k: "number" }
  | { readonly k: "bool" }
  | { readonly k: "string" }
  | { readonly k: "dtype" }
  | { readonly k: "list"; readonly elem: Type }
  | { readonly k: "error" };

export const INT: Type = { k: "int" };
export const FLOAT: Type = { k: "float" };
export const NUMBER: Type = { k: "number" };
export const BOOL: Type = { k: "bool" };
export const STRING: Type = { k: "string" };
export const DTYPE: Type = { k: "dtype" };
export const SHAPE: Type = { k: "list", elem: INT };
export const ERROR: Type = { k: "error" };

/** Prints a type as users see it in messages: `int`, `list<int>`, … */
export function showType(t: Type): string {
  if (t.k === "list") return t.elem.k === "int" ? "shape (list<int>)" : `list<${showType(t.elem)}>`;
  return t.k;
}

export function isNumeric(t: Type): boolean {
  return t.k === "int" || t.k === "float" || t.k === "number" || t.k === "error";
}

export function sameType(a: Type, b: Type): boolean {
  if (a.k === "list" && b.k === "list") return sameType(a.elem, b.elem);
  return a.k === b.k;
}

/** The result type of arithmetic on two numeric types: int op int = int, any float = float, else number. */
export function numericJoin(a: Type, b: Type): Type {
  if (a.k === "error" || b.k === "error") return ERROR;
  if (a.k === "float" || b.k === "float") return FLOAT;
  if (a.k === "int" && b.k === "int") return INT;
  return NUMBER;
}

/** The common type of two branches or list items, or undefined when they have none. */
export function unify(a: Type, b: Type): Type | undefined {
  if (a.k === "error") return b;
  if (b.k === "error") return a;
  if (isNumeric(a) && isNumeric(b)) return numericJoin(a, b);
  if ((a.k === "string" || a.k === "dtype") && (b.k === "string" || b.k === "dtype")) return a.k === b.k ? a : STRING;
  if (a.k === "list" && b.k === "list") {
    const e = unify(a.elem, b.elem);
    return e && { k: "list", elem: e };
  }
  return a.k === b.k ? a : undefined;
}

/** Whether values of types a and b may be compared with == and !=. */
export function comparable(a: Type, b: Type): boolean {
  return unify(a, b) !== undefined;
}
