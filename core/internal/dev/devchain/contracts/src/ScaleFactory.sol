// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {IVotes} from "@openzeppelin/contracts/governance/utils/IVotes.sol";
import {ScaleGovernor} from "./ScaleGovernor.sol";
import {ScaleToken} from "./ScaleToken.sol";

/// @title ScaleFactory deploys DAOs for govgate's scale harness cheaply: each
/// is a pair of EIP-1167 minimal proxies (OpenZeppelin's Clones), a
/// ScaleToken and a ScaleGovernor counting its votes, about 45 bytes of
/// code each instead of the 25 KB of a governor.
contract ScaleFactory {
    event Deployed(uint256 indexed index, address governor, address token);

    address public immutable governorImpl;
    address public immutable tokenImpl;
    uint256 public count;

    constructor(address governorImpl_, address tokenImpl_) {
        governorImpl = governorImpl_;
        tokenImpl = tokenImpl_;
    }

    /// @notice deploy makes n DAOs whose tokens' supply goes to holder.
    function deploy(uint256 n, address holder, uint256 supply, uint48 votingDelay, uint32 votingPeriod, uint256 quorumPercent)
        external
    {
        for (uint256 i = 0; i < n; i++) {
            address token = Clones.clone(tokenImpl);
            ScaleToken(token).initialize(holder, supply);
            address governor = Clones.clone(governorImpl);
            ScaleGovernor(payable(governor)).initialize("Govgate Scale Governor", IVotes(token), votingDelay, votingPeriod, quorumPercent);
            emit Deployed(count++, governor, token);
        }
    }
}
