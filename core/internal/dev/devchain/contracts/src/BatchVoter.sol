// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IGovernor} from "@openzeppelin/contracts/governance/IGovernor.sol";

/// @title BatchVoter relays many signed ballots (castVoteBySig) in one
/// transaction, so that a benchmark can have thousands of distinct voters cast
/// real VoteCast events without funding thousands of accounts.
contract BatchVoter {
    function castVotesBySig(
        IGovernor governor,
        uint256 proposalId,
        uint8[] calldata support,
        address[] calldata voters,
        bytes[] calldata signatures
    ) external {
        for (uint256 i = 0; i < voters.length; i++) {
            governor.castVoteBySig(proposalId, support[i], voters[i], signatures[i]);
        }
    }
}
