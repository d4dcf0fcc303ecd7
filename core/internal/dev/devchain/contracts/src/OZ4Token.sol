// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts-v4/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts-v4/token/ERC20/extensions/ERC20Permit.sol";
import {ERC20Votes} from "@openzeppelin/contracts-v4/token/ERC20/extensions/ERC20Votes.sol";

/// @title OZ4Token is the voting token of the OpenZeppelin 4.9 DAO: a stock 4.9
/// ERC20Votes (block-number clock) whose whole supply is minted to one holder.
contract OZ4Token is ERC20, ERC20Permit, ERC20Votes {
    constructor(address holder, uint256 supply) ERC20("Govgate Dev Token 4", "GGD4") ERC20Permit("Govgate Dev Token 4") {
        _mint(holder, supply);
    }

    function _afterTokenTransfer(address from, address to, uint256 amount) internal override(ERC20, ERC20Votes) {
        super._afterTokenTransfer(from, to, amount);
    }

    function _mint(address to, uint256 amount) internal override(ERC20, ERC20Votes) {
        super._mint(to, amount);
    }

    function _burn(address account, uint256 amount) internal override(ERC20, ERC20Votes) {
        super._burn(account, amount);
    }
}
