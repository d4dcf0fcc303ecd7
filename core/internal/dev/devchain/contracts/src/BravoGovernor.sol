// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IVotes} from "@openzeppelin/contracts/governance/utils/IVotes.sol";

/// @title BravoGovernor is a minimal GovernorBravo-compatible governor for
/// govgate's development chain. It is NOT Compound's code: it keeps
/// GovernorBravo's external interface for propose, castVote,
/// castVoteWithReason, queue, execute, cancel and state, its sequential
/// proposal ids and block-number voting window, and emits GovernorBravo's
/// events with their exact signatures (so the topics match mainnet Bravo
/// governors). It leaves out the admin, whitelist, proposal threshold and
/// separate Timelock contract: the timelock delay is enforced inline and
/// execute calls the targets itself.
contract BravoGovernor {
    event ProposalCreated(
        uint id,
        address proposer,
        address[] targets,
        uint[] values,
        string[] signatures,
        bytes[] calldatas,
        uint startBlock,
        uint endBlock,
        string description
    );
    event VoteCast(address indexed voter, uint proposalId, uint8 support, uint votes, string reason);
    event ProposalCanceled(uint id);
    event ProposalQueued(uint id, uint eta);
    event ProposalExecuted(uint id);

    enum ProposalState {
        Pending,
        Active,
        Canceled,
        Defeated,
        Succeeded,
        Queued,
        Expired,
        Executed
    }

    struct Receipt {
        bool hasVoted;
        uint8 support;
        uint96 votes;
    }

    struct Proposal {
        uint id;
        address proposer;
        uint eta;
        address[] targets;
        uint[] values;
        string[] signatures;
        bytes[] calldatas;
        uint startBlock;
        uint endBlock;
        uint forVotes;
        uint againstVotes;
        uint abstainVotes;
        bool canceled;
        bool executed;
        mapping(address => Receipt) receipts;
    }

    string public constant name = "Govgate Dev Bravo";
    uint public constant GRACE_PERIOD = 14 days;

    IVotes public immutable token;
    uint public immutable votingDelay;
    uint public immutable votingPeriod;
    uint public immutable delay;
    uint public immutable quorumVotes;
    uint public proposalCount;
    mapping(uint => Proposal) public proposals;

    constructor(IVotes token_, uint votingDelay_, uint votingPeriod_, uint delay_, uint quorumVotes_) {
        token = token_;
        votingDelay = votingDelay_;
        votingPeriod = votingPeriod_;
        delay = delay_;
        quorumVotes = quorumVotes_;
    }

    function propose(
        address[] memory targets,
        uint[] memory values,
        string[] memory signatures,
        bytes[] memory calldatas,
        string memory description
    ) public returns (uint) {
        require(
            targets.length == values.length && targets.length == signatures.length && targets.length == calldatas.length,
            "BravoGovernor::propose: proposal function information arity mismatch"
        );
        require(targets.length != 0, "BravoGovernor::propose: must provide actions");

        uint startBlock = block.number + votingDelay;
        uint endBlock = startBlock + votingPeriod;
        uint id = ++proposalCount;
        Proposal storage p = proposals[id];
        p.id = id;
        p.proposer = msg.sender;
        p.targets = targets;
        p.values = values;
        p.signatures = signatures;
        p.calldatas = calldatas;
        p.startBlock = startBlock;
        p.endBlock = endBlock;

        emit ProposalCreated(id, msg.sender, targets, values, signatures, calldatas, startBlock, endBlock, description);
        return id;
    }

    function castVote(uint proposalId, uint8 support) external {
        emit VoteCast(msg.sender, proposalId, support, castVoteInternal(msg.sender, proposalId, support), "");
    }

    function castVoteWithReason(uint proposalId, uint8 support, string calldata reason) external {
        emit VoteCast(msg.sender, proposalId, support, castVoteInternal(msg.sender, proposalId, support), reason);
    }

    function castVoteInternal(address voter, uint proposalId, uint8 support) internal returns (uint96) {
        require(state(proposalId) == ProposalState.Active, "BravoGovernor::castVoteInternal: voting is closed");
        require(support <= 2, "BravoGovernor::castVoteInternal: invalid vote type");
        Proposal storage p = proposals[proposalId];
        Receipt storage receipt = p.receipts[voter];
        require(!receipt.hasVoted, "BravoGovernor::castVoteInternal: voter already voted");
        uint96 votes = uint96(token.getPastVotes(voter, p.startBlock));

        if (support == 0) {
            p.againstVotes += votes;
        } else if (support == 1) {
            p.forVotes += votes;
        } else {
            p.abstainVotes += votes;
        }
        receipt.hasVoted = true;
        receipt.support = support;
        receipt.votes = votes;
        return votes;
    }

    function queue(uint proposalId) external {
        require(state(proposalId) == ProposalState.Succeeded, "BravoGovernor::queue: proposal can only be queued if it is succeeded");
        uint eta = block.timestamp + delay;
        proposals[proposalId].eta = eta;
        emit ProposalQueued(proposalId, eta);
    }

    function execute(uint proposalId) external payable {
        require(state(proposalId) == ProposalState.Queued, "BravoGovernor::execute: proposal can only be executed if it is queued");
        Proposal storage p = proposals[proposalId];
        require(block.timestamp >= p.eta, "BravoGovernor::execute: transaction hasn't surpassed time lock");
        p.executed = true;
        for (uint i = 0; i < p.targets.length; i++) {
            bytes memory callData;
            if (bytes(p.signatures[i]).length == 0) {
                callData = p.calldatas[i];
            } else {
                callData = abi.encodePacked(bytes4(keccak256(bytes(p.signatures[i]))), p.calldatas[i]);
            }
            (bool ok, ) = p.targets[i].call{value: p.values[i]}(callData);
            require(ok, "BravoGovernor::execute: transaction execution reverted");
        }
        emit ProposalExecuted(proposalId);
    }

    function cancel(uint proposalId) external {
        require(state(proposalId) != ProposalState.Executed, "BravoGovernor::cancel: cannot cancel executed proposal");
        Proposal storage p = proposals[proposalId];
        require(msg.sender == p.proposer, "BravoGovernor::cancel: only the proposer may cancel");
        p.canceled = true;
        emit ProposalCanceled(proposalId);
    }

    function state(uint proposalId) public view returns (ProposalState) {
        require(proposalId > 0 && proposalId <= proposalCount, "BravoGovernor::state: invalid proposal id");
        Proposal storage p = proposals[proposalId];
        if (p.canceled) {
            return ProposalState.Canceled;
        } else if (block.number <= p.startBlock) {
            return ProposalState.Pending;
        } else if (block.number <= p.endBlock) {
            return ProposalState.Active;
        } else if (p.forVotes <= p.againstVotes || p.forVotes < quorumVotes) {
            return ProposalState.Defeated;
        } else if (p.eta == 0) {
            return ProposalState.Succeeded;
        } else if (p.executed) {
            return ProposalState.Executed;
        } else if (block.timestamp >= p.eta + GRACE_PERIOD) {
            return ProposalState.Expired;
        }
        return ProposalState.Queued;
    }

    function getReceipt(uint proposalId, address voter) external view returns (Receipt memory) {
        return proposals[proposalId].receipts[voter];
    }
}
