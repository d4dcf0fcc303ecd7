// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Governor, IGovernor} from "@openzeppelin/contracts-v4/governance/Governor.sol";
import {GovernorCountingSimple} from "@openzeppelin/contracts-v4/governance/extensions/GovernorCountingSimple.sol";
import {GovernorPreventLateQuorum} from "@openzeppelin/contracts-v4/governance/extensions/GovernorPreventLateQuorum.sol";
import {GovernorSettings} from "@openzeppelin/contracts-v4/governance/extensions/GovernorSettings.sol";
import {GovernorTimelockCompound, ICompoundTimelock} from "@openzeppelin/contracts-v4/governance/extensions/GovernorTimelockCompound.sol";
import {GovernorVotes, IVotes} from "@openzeppelin/contracts-v4/governance/extensions/GovernorVotes.sol";
import {GovernorVotesQuorumFraction} from "@openzeppelin/contracts-v4/governance/extensions/GovernorVotesQuorumFraction.sol";

/// @title OZ4Governor is an OpenZeppelin 4.9 Governor behind a Compound-style
/// Timelock (GovernorTimelockCompound), as many DAOs deployed before 5.0:
/// assembled from the stock 4.9 modules as the OpenZeppelin Wizard would, with
/// only the overrides that Solidity requires. Through the Compound timelock's
/// grace period a queued proposal can expire.
contract OZ4Governor is
    Governor,
    GovernorSettings,
    GovernorCountingSimple,
    GovernorVotes,
    GovernorVotesQuorumFraction,
    GovernorTimelockCompound,
    GovernorPreventLateQuorum
{
    constructor(
        string memory name_,
        IVotes token_,
        ICompoundTimelock timelock_,
        uint256 votingDelay_,
        uint256 votingPeriod_,
        uint256 quorumPercent_,
        uint64 lateQuorumExtension_
    )
        Governor(name_)
        GovernorSettings(votingDelay_, votingPeriod_, 0)
        GovernorVotes(token_)
        GovernorVotesQuorumFraction(quorumPercent_)
        GovernorTimelockCompound(timelock_)
        GovernorPreventLateQuorum(lateQuorumExtension_)
    {}

    function votingDelay() public view override(IGovernor, GovernorSettings) returns (uint256) {
        return super.votingDelay();
    }

    function votingPeriod() public view override(IGovernor, GovernorSettings) returns (uint256) {
        return super.votingPeriod();
    }

    function quorum(uint256 timepoint) public view override(IGovernor, GovernorVotesQuorumFraction) returns (uint256) {
        return super.quorum(timepoint);
    }

    function proposalThreshold() public view override(Governor, GovernorSettings) returns (uint256) {
        return super.proposalThreshold();
    }

    function state(uint256 proposalId) public view override(Governor, GovernorTimelockCompound) returns (ProposalState) {
        return super.state(proposalId);
    }

    function proposalDeadline(uint256 proposalId)
        public
        view
        override(IGovernor, Governor, GovernorPreventLateQuorum)
        returns (uint256)
    {
        return super.proposalDeadline(proposalId);
    }

    function _castVote(uint256 proposalId, address account, uint8 support, string memory reason, bytes memory params)
        internal
        override(Governor, GovernorPreventLateQuorum)
        returns (uint256)
    {
        return super._castVote(proposalId, account, support, reason, params);
    }

    function _execute(
        uint256 proposalId,
        address[] memory targets,
        uint256[] memory values,
        bytes[] memory calldatas,
        bytes32 descriptionHash
    ) internal override(Governor, GovernorTimelockCompound) {
        super._execute(proposalId, targets, values, calldatas, descriptionHash);
    }

    function _cancel(
        address[] memory targets,
        uint256[] memory values,
        bytes[] memory calldatas,
        bytes32 descriptionHash
    ) internal override(Governor, GovernorTimelockCompound) returns (uint256) {
        return super._cancel(targets, values, calldatas, descriptionHash);
    }

    function _executor() internal view override(Governor, GovernorTimelockCompound) returns (address) {
        return super._executor();
    }

    function supportsInterface(bytes4 interfaceId)
        public
        view
        override(Governor, GovernorTimelockCompound)
        returns (bool)
    {
        return super.supportsInterface(interfaceId);
    }
}
