#!/usr/bin/env bash
# gen.sh regenerates artifacts/*.json (ABI + creation bytecode) from src/*.sol
# with the solc and @openzeppelin/contracts (5.x and 4.9) versions pinned in
# package-lock.json, and copies Uniswap's compiled GovernorAlpha, Uni and
# Timelock from @uniswap/governance and Safe's MultiSendCallOnly from
# @safe-global/safe-contracts. It needs node and npm (the npm
# registry, or a warm npm cache). Run it from anywhere:
#
#	bash core/internal/dev/devchain/contracts/gen.sh     (or: go generate ./core/devchain)
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node_modules/solc ] || [ ! -d node_modules/@openzeppelin/contracts ] ||
	[ ! -d node_modules/@openzeppelin/contracts-v4 ] || [ ! -d node_modules/@uniswap/governance ] ||
	[ ! -d node_modules/@safe-global/safe-contracts ] || [ ! -d node_modules/@openzeppelin/contracts-upgradeable ]; then
	npm ci --no-audit --no-fund
fi
node gen.js
