// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {ERC20Votes} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Votes.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";

/// @title GovToken is the voting token of govgate's development chain: a plain
/// OpenZeppelin ERC20Votes whose whole supply is minted to one holder, who then
/// hands it out to the dev accounts.
contract GovToken is ERC20, ERC20Permit, ERC20Votes {
    constructor(address holder, uint256 supply) ERC20("Govgate Dev Token", "GGD") ERC20Permit("Govgate Dev Token") {
        _mint(holder, supply);
    }

    function _update(address from, address to, uint256 value) internal override(ERC20, ERC20Votes) {
        super._update(from, to, value);
    }

    function nonces(address owner) public view override(ERC20Permit, Nonces) returns (uint256) {
        return super.nonces(owner);
    }
}
