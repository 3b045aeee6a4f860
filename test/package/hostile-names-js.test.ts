/** Hostile names (test/support/hostile-names.ts) in the modules of `--emit js`. */
import { hostileNameTests } from "../support/hostile-names.js";

hostileNameTests("js");
