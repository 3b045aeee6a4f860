// Preloaded by bench/lint-render.js (`node -r`): at exit, writes the CPU time (user + system) of
// the process's main thread and of its other threads (the validation worker, V8's compiler and GC
// threads) to stderr as `kernelc-threads MAIN OTHER` in milliseconds, read from /proc (Linux; on
// other systems it writes nothing).
"use strict";
const fs = require("node:fs");

process.on("exit", () => {
  let main = 0;
  let other = 0;
  try {
    for (const tid of fs.readdirSync("/proc/self/task")) {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      // Fields after the command name: utime and stime are the 14th and 15th of the line, in clock ticks (100 a second).
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ms = (Number(fields[11]) + Number(fields[12])) * 10;
      if (tid === String(process.pid)) main += ms;
      else other += ms;
    }
  } catch {
    return;
  }
  fs.writeSync(2, `kernelc-threads ${main} ${other}\n`);
});
