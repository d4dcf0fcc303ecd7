// gen.js compiles src/*.sol, and src/Governor.sol.in once per counting
// module, with solc (solcjs from npm) against
// @openzeppelin/contracts (5.x) and @openzeppelin/contracts-v4 (4.9, an npm
// alias) from node_modules and writes one artifact per contract to
// artifacts/NAME.json: {"contractName", "abi", "bytecode"}. It then copies,
// without recompiling, the contracts that Uniswap published compiled in
// @uniswap/governance (GovernorAlpha, its Uni token and Compound's Timelock,
// solc 0.5.16), adding a "source" field that says where each came from.
// Run it through gen.sh, which installs the pinned packages first.
"use strict";
const fs = require("fs");
const path = require("path");
const solc = require("solc");

const srcDir = path.join(__dirname, "src");
const outDir = path.join(__dirname, "artifacts");

const sources = {};
for (const f of fs.readdirSync(srcDir).filter((f) => f.endsWith(".sol")).sort()) {
  sources[f] = { content: fs.readFileSync(path.join(srcDir, f), "utf8") };
}
// src/Governor.sol.in is compiled once per counting module (see its header):
// the sources exist only here, never as files.
const governors = {
  OZGovernor: "GovernorCountingSimple",
  FractionalGovernor: "GovernorCountingFractional",
  OverridableGovernor: "GovernorCountingOverridable",
};
const governorTemplate = fs.readFileSync(path.join(srcDir, "Governor.sol.in"), "utf8");
for (const [name, counting] of Object.entries(governors)) {
  const content = governorTemplate.replaceAll("{{NAME}}", name).replaceAll("{{COUNTING}}", counting);
  sources[name + ".sol"] = { content };
}

const input = {
  language: "Solidity",
  sources,
  settings: {
    // cancun: the oldest EVM that OpenZeppelin 5.x (mcopy, transient storage)
    // compiles for; the simulated backend runs every later fork too.
    evmVersion: "cancun",
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
  },
};

function findImports(p) {
  const file = path.join(__dirname, "node_modules", p);
  if (fs.existsSync(file)) return { contents: fs.readFileSync(file, "utf8") };
  return { error: "not found: " + p };
}

const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
let failed = false;
for (const e of out.errors || []) {
  if (e.severity === "error") failed = true;
  // OpenZeppelin's own warnings are not ours to fix.
  const file = (e.sourceLocation && e.sourceLocation.file) || "";
  if (e.severity === "error" || !file.startsWith("@openzeppelin/")) console.error(e.formattedMessage);
}
if (failed) process.exit(1);

fs.mkdirSync(outDir, { recursive: true });
for (const f of Object.keys(sources)) {
  for (const [name, c] of Object.entries(out.contracts[f])) {
    const art = { contractName: name, abi: c.abi, bytecode: "0x" + c.evm.bytecode.object };
    fs.writeFileSync(path.join(outDir, name + ".json"), JSON.stringify(art, null, 1) + "\n");
    console.log(`${name}: ${c.evm.bytecode.object.length / 2} bytes of init code`);
  }
}
console.log("solc " + solc.version());

// Uniswap's governance as deployed on mainnet, from the package's build/.
// Timelock is renamed: src/Timelock.sol is OpenZeppelin's TimelockController.
const uniswap = { GovernorAlpha: "GovernorAlpha", Uni: "Uni", Timelock: "UniswapTimelock" };
const uniPkg = require("@uniswap/governance/package.json");
for (const [built, name] of Object.entries(uniswap)) {
  const file = "@uniswap/governance/build/" + built + ".json";
  const b = require(file);
  const compiler = JSON.parse(b.metadata).compiler.version;
  const art = {
    contractName: name,
    source: `${uniPkg.name}@${uniPkg.version} build/${built}.json (solc ${compiler}), copied unchanged`,
    abi: b.abi,
    bytecode: "0x" + b.evm.bytecode.object,
  };
  fs.writeFileSync(path.join(outDir, name + ".json"), JSON.stringify(art, null, 1) + "\n");
  console.log(`${name}: ${b.evm.bytecode.object.length / 2} bytes of init code, from ${file}`);
}

// Safe's MultiSendCallOnly as published in @safe-global/safe-contracts
// (its build/artifacts, solc 0.7.6), copied unchanged: development
// proposals batch calls through it.
const safePkg = require("@safe-global/safe-contracts/package.json");
{
  const file = "@safe-global/safe-contracts/build/artifacts/contracts/libraries/MultiSendCallOnly.sol/MultiSendCallOnly.json";
  const b = require(file);
  const art = {
    contractName: "MultiSendCallOnly",
    source: `${safePkg.name}@${safePkg.version} build/artifacts/contracts/libraries/MultiSendCallOnly.sol/MultiSendCallOnly.json, copied unchanged`,
    abi: b.abi,
    bytecode: b.bytecode,
  };
  fs.writeFileSync(path.join(outDir, "MultiSendCallOnly.json"), JSON.stringify(art, null, 1) + "\n");
  console.log(`MultiSendCallOnly: ${(b.bytecode.length - 2) / 2} bytes of init code, from ${file}`);
}
