/** Hostile names (test/support/hostile-names.ts) in the modules of `--emit ts`. */
import { hostileNameTests } from "../support/hostile-names.js";

hostileNameTests("ts");
