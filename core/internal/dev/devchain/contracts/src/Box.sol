// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title Box is the target that development proposals call: executing one
/// stores a value, so an executed proposal leaves a visible trace on chain.
contract Box {
    uint256 public value;

    event ValueChanged(uint256 value);

    function store(uint256 newValue) external {
        value = newValue;
        emit ValueChanged(newValue);
    }
}
