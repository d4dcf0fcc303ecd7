// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {ERC20Votes} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Votes.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";

/// @title OffsetGovToken is GovToken on a clock that is not the chain's block
/// number, as on a layer 2: Arbitrum's block.number inside a contract is the
/// layer-1 block number, while the chain numbers its own blocks. Its
/// ERC-6372 clock is block.number plus a fixed offset, and it declares the
/// default block-number mode, as an L2 token does: nothing in CLOCK_MODE
/// tells that the clock is not the chain's block number.
contract OffsetGovToken is ERC20, ERC20Permit, ERC20Votes {
    uint48 public immutable OFFSET;

    constructor(address holder, uint256 supply, uint48 offset)
        ERC20("Govgate Dev Offset Token", "GGDX")
        ERC20Permit("Govgate Dev Offset Token")
    {
        OFFSET = offset;
        _mint(holder, supply);
    }

    function clock() public view override returns (uint48) {
        return uint48(block.number) + OFFSET;
    }

    // solhint-disable-next-line func-name-mixedcase
    function CLOCK_MODE() public pure override returns (string memory) {
        return "mode=blocknumber&from=default";
    }

    function _update(address from, address to, uint256 value) internal override(ERC20, ERC20Votes) {
        super._update(from, to, value);
    }

    function nonces(address owner) public view override(ERC20Permit, Nonces) returns (uint256) {
        return super.nonces(owner);
    }
}
