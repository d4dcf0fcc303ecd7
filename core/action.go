package core

import "encoding/json"

// Action is one call a proposal makes when executed, decoded where govgate
// can: the function, its arguments and, for a call that carries calls of its
// own (a Safe or MultiSend batch, a Multicall, a timelock's schedule or
// queue, a governor's relay, a proxy upgrade with an initializer), those
// calls in the same shape. core/internal/calldata decodes; docs/api.md
// ("Actions") says how.
type Action struct {
	Target string `json:"target"` // EIP-55
	Value  string `json:"value"`  // decimal wei
	// Signature is the function's canonical signature, such as
	// "transfer(address,uint256)"; for a Bravo-style action it is the
	// signature the proposal gives, decoded or not; "" for a call whose
	// function is unknown or that carries no calldata.
	Signature string `json:"signature"`
	Name      string `json:"name"`
	// Selector is the 4-byte function selector, 0x-hex; "" for a call
	// without calldata.
	Selector string `json:"selector,omitempty"`
	Args     []Arg  `json:"args"`
	// Decoded is true when the arguments, encoded again, reproduce the
	// calldata byte for byte (and for a plain value transfer, which has no
	// calldata to decode).
	Decoded bool `json:"decoded"`
	// Source names where the function came from: "proposal" (the Bravo
	// signature of the proposal or the timelock call), "abi" (an operator's
	// ABI for the target), "signatures" (the operator's signatures file) or
	// "curated" (govgate's embedded set); "" when not decoded.
	Source string `json:"source,omitempty"`
	// DelegateCall marks a call run with DELEGATECALL, in the caller's
	// context (a Safe or MultiSend operation 1, a proxy's initializer).
	DelegateCall bool `json:"delegateCall,omitempty"`
	// Calldata is the call's data as the proposal or the carrying call
	// gives it, 0x-hex: without the selector for a Bravo-style action.
	Calldata string `json:"calldata"`
	// Calls are the calls this call makes, decoded in turn, down to
	// MaxCallDepth levels below the proposal.
	Calls []Action `json:"calls"`
	// Truncated marks a call whose own calls were not decoded because it
	// sits at the depth bound.
	Truncated bool `json:"truncated,omitempty"`
}

// MaxCallDepth is how many levels of nested calls are decoded below a
// proposal's own actions.
const MaxCallDepth = 4

// Arg is one decoded argument. Value follows the JSON conventions of the
// notifications: integers are decimal strings, addresses EIP-55, bytes
// 0x-hex, booleans and strings as they are, arrays JSON arrays of such
// values, and a tuple an array of its components as Args.
type Arg struct {
	Name  string          `json:"name,omitempty"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}
