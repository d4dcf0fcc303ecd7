// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {ERC20Upgradeable} from "@openzeppelin/contracts-upgradeable/token/ERC20/ERC20Upgradeable.sol";
import {ERC20VotesUpgradeable} from "@openzeppelin/contracts-upgradeable/token/ERC20/extensions/ERC20VotesUpgradeable.sol";
import {EIP712Upgradeable} from "@openzeppelin/contracts-upgradeable/utils/cryptography/EIP712Upgradeable.sol";

/// @title ScaleToken is the voting token of each ScaleGovernor clone: a stock
/// upgradeable ERC20Votes whose whole supply is minted to one holder and
/// self-delegated at initialisation, so that the holder can propose and
/// vote at once.
contract ScaleToken is Initializable, ERC20Upgradeable, ERC20VotesUpgradeable {
    constructor() {
        _disableInitializers();
    }

    function initialize(address holder, uint256 supply) public initializer {
        __ERC20_init("Govgate Scale Token", "GGS");
        __EIP712_init("Govgate Scale Token", "1");
        __ERC20Votes_init();
        _mint(holder, supply);
        _delegate(holder, holder);
    }

    function _update(address from, address to, uint256 value) internal override(ERC20Upgradeable, ERC20VotesUpgradeable) {
        super._update(from, to, value);
    }
}
