// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {ERC20Votes} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Votes.sol";
import {Votes} from "@openzeppelin/contracts/governance/utils/Votes.sol";
import {VotesExtended} from "@openzeppelin/contracts/governance/utils/VotesExtended.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";

/// @title ExtGovToken is GovToken with VotesExtended, which keeps each
/// account's past delegate and balance: what GovernorCountingOverridable
/// reads to let a delegator override its delegate.
contract ExtGovToken is ERC20, ERC20Permit, ERC20Votes, VotesExtended {
    constructor(address holder, uint256 supply)
        ERC20("Govgate Dev Override Token", "GGDO")
        ERC20Permit("Govgate Dev Override Token")
    {
        _mint(holder, supply);
    }

    function _update(address from, address to, uint256 value) internal override(ERC20, ERC20Votes) {
        super._update(from, to, value);
    }

    function _delegate(address account, address delegatee) internal override(Votes, VotesExtended) {
        super._delegate(account, delegatee);
    }

    function _transferVotingUnits(address from, address to, uint256 amount) internal override(Votes, VotesExtended) {
        super._transferVotingUnits(from, to, amount);
    }

    function nonces(address owner) public view override(ERC20Permit, Nonces) returns (uint256) {
        return super.nonces(owner);
    }
}
