package core

import "time"

// Notification types of a DAO's voting token.
const (
	// TypeDelegateChanged is DelegateChanged: an account chose a delegate.
	TypeDelegateChanged = "delegate.changed"
	// TypeDelegateVotesChanged is DelegateVotesChanged: a delegate's voting
	// power moved (a delegation, or a transfer by one of its delegators).
	TypeDelegateVotesChanged = "delegate.votes_changed"
)

// TokenEvent is one DelegateChanged or DelegateVotesChanged log of a DAO's
// voting token. ERC20Votes and ERC721Votes (OpenZeppelin 4.x and 5.x) and
// Compound's and Uniswap's tokens declare both with the same topics.
type TokenEvent struct {
	DAO         string
	ChainID     uint64
	Token       string // EIP-55
	Kind        string // TypeDelegateChanged or TypeDelegateVotesChanged
	BlockNumber uint64
	BlockHash   string
	TxHash      string
	LogIndex    uint
	At          time.Time // block time
	// Timepoint is the governor's clock() at BlockNumber: the key of the
	// token's checkpoint that the event wrote, what getPastVotes takes.
	Timepoint uint64

	// DelegateChanged
	Delegator    string
	FromDelegate string
	ToDelegate   string
	// Moved is the delegator's voting units that moved with the change
	// (its balance), read from the DelegateVotesChanged of the same
	// transaction; "" when none followed.
	Moved string

	// DelegateVotesChanged
	Delegate      string
	PreviousVotes string // decimal
	NewVotes      string // decimal
}

// Delegate is an account that holds, or held, delegated voting power in a
// DAO, as the token's events say at the DAO's indexed block.
type Delegate struct {
	DAO     string `json:"dao"`
	Address string `json:"address"` // EIP-55
	// VotingPower is the token's getVotes (getCurrentVotes on Compound-style
	// tokens) at the indexed block, decimal.
	VotingPower string `json:"votingPower"`
	// Share is VotingPower over the DAO's total delegated power, 0 to 1.
	Share float64 `json:"share"`
	// Delegators is how many accounts delegate to it (itself included when
	// it self-delegates).
	Delegators int64 `json:"delegators"`
	// VotesCast counts the proposals it voted on; ProposalsSince the DAO's
	// proposals created since it first held power; Participation their ratio.
	VotesCast       int64      `json:"votesCast"`
	ProposalsSince  int64      `json:"proposalsSince"`
	Participation   float64    `json:"participation"`
	FirstPowerBlock uint64     `json:"firstPowerBlock"`
	LastVoteAt      *time.Time `json:"lastVoteAt"`
	UpdatedBlock    uint64     `json:"updatedBlock"`
}

// Delegation is whom an account delegates its votes to, since when.
type Delegation struct {
	DAO        string    `json:"dao"`
	Delegator  string    `json:"delegator"`
	Delegate   string    `json:"delegate"` // the zero address: none
	SinceBlock uint64    `json:"sinceBlock"`
	Since      time.Time `json:"since"`
	TxHash     string    `json:"txHash"`
}

// Delegate sort orders of a listing.
const (
	SortVotingPower = "votingPower"
	SortDelegators  = "delegators"
	SortVotes       = "votes"
)

// DelegatePage is one page of a DAO's delegates, with the DAO's total
// delegated power.
type DelegatePage struct {
	Items []Delegate
	// Next is the before of the next page; "" on the last.
	Next       string
	TotalPower string
}

// VoteWithProposal is a vote with its proposal's title and state.
type VoteWithProposal struct {
	Vote
	ProposalTitle string `json:"proposalTitle"`
	ProposalState string `json:"proposalState"`
}
