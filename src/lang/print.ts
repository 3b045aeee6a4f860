import type { Expr } from "../model/ast.js";

/** Prints an AST as an S-expression, e.g. `a + b * c` -> `(+ a (* b c))`. Used by golden tests and debugging. */
export function printExpr(e: Expr): string {
  switch (e.kind) {
    case "number":
      return e.isInt ? String(e.value) : Number.isInteger(e.value) ? `${e.value}.0` : String(e.value);
    case "string":
      return JSON.stringify(e.value);
    case "bool":
      return String(e.value);
    case "name":
      return e.name;
    case "member":
      return `(. ${printExpr(e.object)} ${e.property})`;
    case "call":
      return `(call ${[e.callee, ...e.args].map(printExpr).join(" ")})`;
    case "unary":
      return `(${e.op === "-" ? "neg" : e.op === "+" ? "pos" : "not"} ${printExpr(e.operand)})`;
    case "binary":
      return `(${e.op} ${printExpr(e.left)} ${printExpr(e.right)})`;
    case "cond":
      return `(if ${printExpr(e.cond)} ${printExpr(e.then)} ${printExpr(e.otherwise)})`;
    case "list":
      return `(list${e.items.map((i) => " " + printExpr(i)).join("")})`;
  }
}
