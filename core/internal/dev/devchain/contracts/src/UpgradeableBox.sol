// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {UUPSUpgradeable} from "@openzeppelin/contracts/proxy/utils/UUPSUpgradeable.sol";

/// @title UpgradeableBox is a Box behind an ERC-1967 proxy (BoxProxy), upgraded
/// the UUPS way: a development proposal calls upgradeToAndCall on the proxy to
/// move it to a later version and store a value in the same call. Only the
/// upgrader (the DAO's timelock) may upgrade; each deployment names its version.
contract UpgradeableBox is UUPSUpgradeable {
    address public immutable upgrader;
    uint256 public immutable version;
    uint256 public value;

    event ValueChanged(uint256 value);

    constructor(address upgrader_, uint256 version_) {
        upgrader = upgrader_;
        version = version_;
    }

    function store(uint256 newValue) external {
        value = newValue;
        emit ValueChanged(newValue);
    }

    function _authorizeUpgrade(address) internal view override {
        require(msg.sender == upgrader, "UpgradeableBox: not the upgrader");
    }
}
