package core

import "math/big"

// VoteSplit is how one vote's weight counts on each side of a proposal's
// tallies.
type VoteSplit struct {
	Against, For, Abstain *big.Int
}

// FractionalParamsLen is the length of a split vote's params under
// OpenZeppelin's GovernorCountingFractional: three uint128.
const FractionalParamsLen = 48

// SplitVote returns how a vote counts, as the governor's counting module
// counted it. A support of 0, 1 or 2 puts the whole weight on that side
// (GovernorCountingSimple, Bravo, Alpha, and a "nominal" vote of the
// fractional and overridable modules), whatever the params. Support 255
// (SupportFractional) with 48 bytes of params is a split: three big-endian
// uint128, against, for and abstain, as GovernorCountingFractional reads
// them (params[0:16], [16:32], [32:48]); the governor refuses any other
// length, so other params count nothing. Any other support counts nothing:
// no module accepts it. Params are untrusted bytes from a log: they are
// only sliced, never trusted for a length.
func SplitVote(support uint8, weight *big.Int, params []byte) VoteSplit {
	s := VoteSplit{new(big.Int), new(big.Int), new(big.Int)}
	switch support {
	case 0:
		s.Against.Set(weight)
	case 1:
		s.For.Set(weight)
	case 2:
		s.Abstain.Set(weight)
	case SupportFractional:
		if len(params) == FractionalParamsLen {
			s.Against.SetBytes(params[0:16])
			s.For.SetBytes(params[16:32])
			s.Abstain.SetBytes(params[32:48])
		}
	}
	return s
}

// Total is the weight the split counts.
func (s VoteSplit) Total() *big.Int {
	t := new(big.Int).Add(s.Against, s.For)
	return t.Add(t, s.Abstain)
}
