// gen.js writes ../curated.json: for each published contract, the
// functions of it that governance proposals call, as signatures with their
// parameter names, grouped by where they come from. Run through gen.sh.
//
// The npm packages are fetched with `npm pack` (their tarballs alone: some
// of them depend on packages outside the registry, which a plain install
// would try to fetch) and unpacked under .packs/.
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const packs = path.join(__dirname, ".packs");

// pkg unpacks an npm package at a pinned version and returns its folder.
function pkg(spec) {
  const dir = path.join(packs, spec.replace(/[@/]/g, "_"));
  if (!fs.existsSync(path.join(dir, "package", "package.json"))) {
    fs.mkdirSync(dir, { recursive: true });
    const tgz = execFileSync("npm", ["pack", "--silent", "--pack-destination", dir, spec], { encoding: "utf8" }).trim().split("\n").pop();
    execFileSync("tar", ["xzf", path.join(dir, tgz), "-C", dir]);
  }
  return path.join(dir, "package");
}

const OZ = "@openzeppelin/contracts@5.7.0";
const OZ4 = "@openzeppelin/contracts@4.9.6";
const SAFE = "@safe-global/safe-contracts@1.4.1";
const UNIGOV = "@uniswap/governance@1.0.2";
const UNIV2 = "@uniswap/v2-core@1.0.1";
const UNIV3 = "@uniswap/v3-core@1.0.1";
const AAVE = "@aave/core-v3@1.19.3";
const LINK = "@chainlink/contracts@1.5.0";

// picks: [package, file in it, function names to take (every overload)].
const picks = [
  // Tokens.
  [OZ, "build/contracts/IERC20.json", ["transfer", "approve", "transferFrom"]],
  [OZ, "build/contracts/IERC721.json", ["safeTransferFrom", "transferFrom", "approve", "setApprovalForAll"]],
  [OZ, "build/contracts/IERC1155.json", ["safeTransferFrom", "safeBatchTransferFrom"]],
  [OZ, "build/contracts/Votes.json", ["delegate"]],
  // Ownership and roles.
  [OZ, "build/contracts/Ownable2Step.json", ["transferOwnership", "renounceOwnership", "acceptOwnership"]],
  [OZ, "build/contracts/AccessControlDefaultAdminRules.json", ["grantRole", "revokeRole", "renounceRole", "beginDefaultAdminTransfer", "acceptDefaultAdminTransfer", "cancelDefaultAdminTransfer", "changeDefaultAdminDelay", "rollbackDefaultAdminDelay"]],
  // Proxies and upgrades, 5.x then what 4.9 has beside.
  [OZ, "build/contracts/UUPSUpgradeable.json", ["upgradeToAndCall"]],
  [OZ, "build/contracts/ProxyAdmin.json", ["upgradeAndCall"]],
  [OZ4, "build/contracts/UUPSUpgradeable.json", ["upgradeTo"]],
  [OZ4, "build/contracts/ProxyAdmin.json", ["upgrade", "changeProxyAdmin"]],
  [OZ4, "build/contracts/ITransparentUpgradeableProxy.json", ["changeAdmin"]],
  // OpenZeppelin Governor's settings, 5.x then 4.9's.
  [OZ, "build/contracts/Governor.json", ["relay"]],
  [OZ, "build/contracts/GovernorSettings.json", ["setVotingDelay", "setVotingPeriod", "setProposalThreshold"]],
  [OZ, "build/contracts/GovernorVotesQuorumFraction.json", ["updateQuorumNumerator"]],
  [OZ, "build/contracts/GovernorTimelockControl.json", ["updateTimelock"]],
  [OZ, "build/contracts/GovernorPreventLateQuorum.json", ["setLateQuorumVoteExtension"]],
  [OZ, "build/contracts/GovernorProposalGuardian.json", ["setProposalGuardian"]],
  [OZ, "build/contracts/GovernorVotesSuperQuorumFraction.json", ["updateSuperQuorumNumerator"]],
  [OZ4, "build/contracts/GovernorSettings.json", ["setVotingDelay", "setVotingPeriod"]],
  [OZ4, "build/contracts/GovernorPreventLateQuorum.json", ["setLateQuorumVoteExtension"]],
  // TimelockController.
  [OZ, "build/contracts/TimelockController.json", ["schedule", "scheduleBatch", "execute", "executeBatch", "cancel", "updateDelay"]],
  // Safe 1.4.1 and its MultiSend.
  [SAFE, "build/artifacts/contracts/Safe.sol/Safe.json", ["execTransaction", "addOwnerWithThreshold", "removeOwner", "swapOwner", "changeThreshold", "enableModule", "disableModule", "setGuard", "setFallbackHandler", "execTransactionFromModule"]],
  [SAFE, "build/artifacts/contracts/libraries/MultiSend.sol/MultiSend.json", ["multiSend"]],
  // Compound's Timelock as Uniswap published it, and Uniswap's own admin.
  [UNIGOV, "build/Timelock.json", ["setDelay", "setPendingAdmin", "acceptAdmin", "queueTransaction", "cancelTransaction", "executeTransaction"]],
  [UNIGOV, "build/Uni.json", ["setMinter", "mint"]],
  [UNIGOV, "build/FeeToSetter.json", ["setOwner", "setFeeToSetter", "toggleFees"]],
  [UNIGOV, "build/FeeTo.json", ["setFeeRecipient", "updateTokenAllowState"]],
  [UNIGOV, "build/TreasuryVester.json", ["setRecipient", "claim"]],
  // Uniswap's fee switches.
  [UNIV2, "build/UniswapV2Factory.json", ["setFeeTo", "setFeeToSetter"]],
  [UNIV3, "artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory.json", ["setOwner", "enableFeeAmount"]],
  [UNIV3, "artifacts/contracts/UniswapV3Pool.sol/UniswapV3Pool.json", ["setFeeProtocol", "collectProtocol"]],
  // Aave v3's risk parameters, roles and price sources.
  [AAVE, "artifacts/contracts/protocol/pool/PoolConfigurator.sol/PoolConfigurator.json", ["initReserves", "dropReserve", "configureReserveAsCollateral", "setReserveBorrowing", "setReserveFactor", "setSupplyCap", "setBorrowCap", "setDebtCeiling", "setReserveActive", "setReserveFreeze", "setReservePause", "setPoolPause", "setReserveInterestRateStrategyAddress", "setEModeCategory", "setAssetEModeCategory", "setLiquidationProtocolFee", "updateFlashloanPremiumTotal", "updateFlashloanPremiumToProtocol"]],
  [AAVE, "artifacts/contracts/protocol/configuration/ACLManager.sol/ACLManager.json", ["addPoolAdmin", "removePoolAdmin", "addRiskAdmin", "removeRiskAdmin", "addEmergencyAdmin", "removeEmergencyAdmin", "addAssetListingAdmin"]],
  [AAVE, "artifacts/contracts/protocol/configuration/PoolAddressesProvider.sol/PoolAddressesProvider.json", ["setPriceOracle", "setACLAdmin", "setAddress", "setPoolImpl", "setPoolConfiguratorImpl"]],
  [AAVE, "artifacts/contracts/misc/AaveOracle.sol/AaveOracle.json", ["setAssetSources", "setFallbackOracle"]],
  // Chainlink's feed proxies: a feed changes by propose and confirm.
  [LINK, "abi/v0.8/data-feeds/BundleAggregatorProxy.abi.json", ["proposeAggregator", "confirmAggregator"]],
  [LINK, "abi/v0.8/data-feeds/DataFeedsCache.abi.json", ["setFeedAdmin"]],
];

// Published as source only (no npm package carries their ABI): copied
// from the contracts as deployed, each group saying where from.
const bySource = [
  {
    from: "Multicall3, github.com/mds1/multicall src/Multicall3.sol (deployed at 0xcA11bde05977b3631167028862bE2a173976CA11 on most chains)",
    functions: [
      "aggregate((address target,bytes callData)[] calls)",
      "aggregate3((address target,bool allowFailure,bytes callData)[] calls)",
      "aggregate3Value((address target,bool allowFailure,uint256 value,bytes callData)[] calls)",
      "tryAggregate(bool requireSuccess,(address target,bytes callData)[] calls)",
      "tryBlockAndAggregate(bool requireSuccess,(address target,bytes callData)[] calls)",
      "blockAndAggregate((address target,bytes callData)[] calls)",
    ],
  },
  {
    from: "Compound v2, github.com/compound-finance/compound-protocol contracts/Comptroller.sol, CToken.sol, CErc20Delegator.sol, Unitroller.sol",
    functions: [
      "_supportMarket(address cToken)",
      "_setCollateralFactor(address cToken,uint256 newCollateralFactorMantissa)",
      "_setCloseFactor(uint256 newCloseFactorMantissa)",
      "_setLiquidationIncentive(uint256 newLiquidationIncentiveMantissa)",
      "_setPriceOracle(address newOracle)",
      "_setMarketBorrowCaps(address[] cTokens,uint256[] newBorrowCaps)",
      "_setBorrowCapGuardian(address newBorrowCapGuardian)",
      "_setPauseGuardian(address newPauseGuardian)",
      "_setMintPaused(address cToken,bool state)",
      "_setBorrowPaused(address cToken,bool state)",
      "_setTransferPaused(bool state)",
      "_setSeizePaused(bool state)",
      "_setCompSpeeds(address[] cTokens,uint256[] supplySpeeds,uint256[] borrowSpeeds)",
      "_setContributorCompSpeed(address contributor,uint256 compSpeed)",
      "_grantComp(address recipient,uint256 amount)",
      "_become(address unitroller)",
      "_setPendingImplementation(address newPendingImplementation)",
      "_acceptImplementation()",
      "_setReserveFactor(uint256 newReserveFactorMantissa)",
      "_reduceReserves(uint256 reduceAmount)",
      "_setInterestRateModel(address newInterestRateModel)",
      "_setComptroller(address newComptroller)",
      "_setImplementation(address implementation_,bool allowResign,bytes becomeImplementationData)",
    ],
  },
  {
    from: "Compound GovernorBravo, github.com/compound-finance/compound-protocol contracts/Governance/GovernorBravoDelegate.sol and GovernorBravoDelegator.sol",
    functions: [
      "_setVotingDelay(uint256 newVotingDelay)",
      "_setVotingPeriod(uint256 newVotingPeriod)",
      "_setProposalThreshold(uint256 newProposalThreshold)",
      "_setWhitelistAccountExpiration(address account,uint256 expiration)",
      "_setWhitelistGuardian(address account)",
      "_setPendingAdmin(address newPendingAdmin)",
      "_acceptAdmin()",
      "_initiate(address governorAlpha)",
      "_setImplementation(address implementation_)",
    ],
  },
];

function render(p, named) {
  let t = p.type;
  if (t.startsWith("tuple")) t = "(" + p.components.map((c) => render(c, named)).join(",") + ")" + t.slice("tuple".length);
  return named && p.name ? t + " " + p.name : t;
}

const seen = new Set();
const sources = [];
let count = 0;
function take(from, fns) {
  const out = [];
  for (const f of fns) {
    const canonical = f.replace(/ [A-Za-z_$][A-Za-z0-9_$]*(?=[,)])/g, "");
    if (seen.has(canonical)) continue;
    seen.add(canonical);
    out.push(f);
  }
  if (out.length) sources.push({ from, functions: out });
  count += out.length;
}

for (const [spec, file, names] of picks) {
  const raw = JSON.parse(fs.readFileSync(path.join(pkg(spec), file), "utf8"));
  const abi = Array.isArray(raw) ? raw : raw.abi;
  const fns = [];
  for (const name of names) {
    const entries = abi.filter((e) => e.type === "function" && e.name === name);
    if (entries.length === 0) throw new Error(`${spec} ${file}: no function ${name}`);
    for (const e of entries) fns.push(`${e.name}(${e.inputs.map((i) => render(i, true)).join(",")})`);
  }
  take(`${spec} ${file}`, fns);
}
for (const s of bySource) take(s.from, s.functions);

const out = {
  note: "Generated by curated/gen.sh from the published ABIs each source names; do not edit.",
  sources,
};
const file = path.join(__dirname, "..", "curated.json");
fs.writeFileSync(file, JSON.stringify(out, null, 1) + "\n");
console.log(`${count} functions from ${sources.length} sources, ${fs.statSync(file).size} bytes`);
