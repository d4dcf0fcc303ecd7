// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {ERC20Votes} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Votes.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";

/// @title TimeGovToken is GovToken on a timestamp clock (ERC-6372): checkpoints,
/// and so the governor's voting delay, period and snapshots, count seconds, as
/// the OpenZeppelin Wizard writes it for "timestamp" voting.
contract TimeGovToken is ERC20, ERC20Permit, ERC20Votes {
    constructor(address holder, uint256 supply)
        ERC20("Govgate Dev Time Token", "GGDT")
        ERC20Permit("Govgate Dev Time Token")
    {
        _mint(holder, supply);
    }

    function clock() public view override returns (uint48) {
        return uint48(block.timestamp);
    }

    // solhint-disable-next-line func-name-mixedcase
    function CLOCK_MODE() public pure override returns (string memory) {
        return "mode=timestamp";
    }

    function _update(address from, address to, uint256 value) internal override(ERC20, ERC20Votes) {
        super._update(from, to, value);
    }

    function nonces(address owner) public view override(ERC20Permit, Nonces) returns (uint256) {
        return super.nonces(owner);
    }
}
