package devchain

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/govgate/govgate/core"
)

// Every dev token (OpenZeppelin 4.9 and 5.x ERC20Votes, Uniswap's Uni)
// declares delegate(address), transfer(address,uint256), delegates(address)
// and balanceOf(address) with the same selectors, so one artifact's ABI
// speaks to all of them; the vote getters differ (getVotes,
// getCurrentVotes) and TokenVotes picks.

// Delegate makes account from delegate its votes on d's token to `to`.
func (c *Chain) Delegate(ctx context.Context, d *Deployment, from int, to common.Address) (*types.Receipt, error) {
	return c.transact(ctx, from, "GovToken", d.Token, "delegate", to)
}

// Transfer sends amount of d's token from account from to `to`; the
// delegates of both sides gain or lose that voting power.
func (c *Chain) Transfer(ctx context.Context, d *Deployment, from int, to common.Address, amount *big.Int) (*types.Receipt, error) {
	return c.transact(ctx, from, "GovToken", d.Token, "transfer", to, amount)
}

// Balance returns account's balance of d's token.
func (c *Chain) Balance(ctx context.Context, d *Deployment, account common.Address) (*big.Int, error) {
	out, err := c.call(ctx, "GovToken", d.Token, "balanceOf", account)
	if err != nil {
		return nil, err
	}
	return out[0].(*big.Int), nil
}

// TokenVotes returns account's current votes on d's token: getVotes on
// the OpenZeppelin tokens, getCurrentVotes on Uni.
func (c *Chain) TokenVotes(ctx context.Context, d *Deployment, account common.Address) (*big.Int, error) {
	name, method := "GovToken", "getVotes"
	if d.Kind == core.KindGovernorAlpha {
		name, method = "Uni", "getCurrentVotes"
	}
	out, err := c.call(ctx, name, d.Token, method, account)
	if err != nil {
		return nil, err
	}
	return out[0].(*big.Int), nil
}

// Delegates returns whom account delegates its votes on d's token to; the
// zero address if it never delegated (it holds tokens without votes).
func (c *Chain) Delegates(ctx context.Context, d *Deployment, account common.Address) (common.Address, error) {
	out, err := c.call(ctx, "GovToken", d.Token, "delegates", account)
	if err != nil {
		return common.Address{}, err
	}
	return out[0].(common.Address), nil
}

// The delegation scene moves voting power among accounts that the
// governance scenes leave alone: the dev accounts from the seventh on
// (past sceneAccounts), and a crowd of Options.Delegators further
// accounts that join joinsPerRound a round, each given a stake by account
// 0. Accounts 0 to 5 propose, vote and cancel in the other scenes, whose
// outcomes rest on their shares, on GovernorAlpha's proposal threshold
// and on Alpha's cancel (the proposer delegates away and must fall below
// the threshold): the scene never delegates to them nor moves their
// tokens, but for account 0's stakes to newcomers, about a ninth of its
// share in all, which leaves every outcome as it was.

// sceneAccounts is how many dev accounts the governance scenes use:
// proposers and voters 0 to 3, and GovernorAlpha's proposers, one per
// role of alphaStep and one for its cancel scene.
func sceneAccounts() int { return len(alphaRoles) + 1 }

const (
	// defaultDelegators is Options.Delegators' default: enough accounts
	// for a leaderboard with a tail, funded as the scene first runs
	// rather than at Start.
	defaultDelegators = 24
	// joinsPerRound is how many of the crowd join in a round: a few, so
	// that a round's events stay some tens per token.
	joinsPerRound = 4
	// delegationGas is the gas limit of the scene's calls, which go into
	// one block and so cannot be estimated one after another: about
	// twice what a transfer writing two new checkpoints uses.
	delegationGas = 250_000
)

// delegationPool is the delegation scene's accounts, set up by its first
// round; c.scene guards it.
type delegationPool struct {
	accounts []int // the free dev accounts, then the crowd
	crowd    int   // index in accounts of the first of the crowd
	joined   int   // how many of the crowd have been given their stakes
}

// holdout reports whether account accounts[i] never delegates: one in
// four of the crowd holds its tokens without votes, as an exchange's
// wallet does, so that there is always somewhere for a transfer to take
// power out of the count.
func (p *delegationPool) holdout(i int) bool { return i >= p.crowd && (i-p.crowd)%4 == 3 }

// Kinds of DelegationMove.
const (
	MoveJoin         = "join"                 // account 0 gives a newcomer, which has not delegated, its stake
	MoveDelegate     = "delegate"             // a first delegation, or one away from self, to another account
	MoveRedelegate   = "re-delegate"          // from one other account to another
	MoveSelfDelegate = "self-delegate"        // to self, from another account or from none
	MoveUndelegate   = "undelegate"           // to the zero address: the tokens keep no votes
	MoveTransfer     = "transfer"             // between holders with different delegates
	MoveToHolder     = "transfer to holder"   // to an account without a delegate: the power leaves the count
	MoveFromHolder   = "transfer from holder" // from an account without a delegate: power enters the count
)

// DelegationMove is one call of the delegation scene.
type DelegationMove struct {
	Kind  string
	Token common.Address
	From  common.Address
	// To is the new delegate (zero to undelegate), or a transfer's recipient.
	To     common.Address
	Amount *big.Int // transfers only
}

// Holding is what a token answers about an account.
type Holding struct {
	Balance  *big.Int
	Delegate common.Address
	Votes    *big.Int
}

// DelegationRound is what one round of the delegation scene did.
type DelegationRound struct {
	// Accounts are the accounts that the scene moves power among, this
	// round's newcomers included.
	Accounts []common.Address
	Moves    []DelegationMove
	Receipts []*types.Receipt
	// Want is, for each token and each account whose balance, delegate or
	// votes the round may have changed, what the token answers after it.
	Want map[common.Address]map[common.Address]Holding
}

// MoveDelegations plays one round of the delegation scene on every dev
// DAO's token (dev-oz and dev-bravo share one), in one block: newcomers
// join with a stake from account 0; holders that have not delegated do
// (the newcomers of the round before, mostly to themselves); a
// re-delegation chain (a delegates to b, b to c: a's votes stay with b);
// an account returns to self-delegation; a transfer moves power between
// two delegates; a transfer goes to a holder that has not delegated; and,
// by turns, such a holder sends tokens to a delegator or an account
// undelegates. Who does what is drawn from round, so that each round moves
// different power. The first round funds the crowd with ETH and, with
// fewer than six dev accounts, makes GovernorAlpha's staging proposers
// first, so that the crowd's accounts come after them.
//
// Every transfer spends only what its sender held before the round: the
// block's order of the senders' transactions does not change the outcome.
func (c *Chain) MoveDelegations(ctx context.Context, round int) (*DelegationRound, error) {
	c.scene.Lock()
	defer c.scene.Unlock()
	if err := c.setUpDelegation(ctx); err != nil {
		return nil, fmt.Errorf("delegation: %w", err)
	}
	pool := c.delegation
	c.mu.Lock()
	addrs := slices.Clone(c.addrs)
	c.mu.Unlock()
	joiners := min(joinsPerRound, len(pool.accounts)-pool.crowd-pool.joined)
	active := pool.crowd + pool.joined + joiners // accounts[:active] take part

	out := &DelegationRound{Want: map[common.Address]map[common.Address]Holding{}}
	for _, i := range pool.accounts[:active] {
		out.Accounts = append(out.Accounts, addrs[i])
	}
	var books []*delegationBook
	var calls []txCall
	for ti, d := range c.votingTokens() {
		b, err := c.readBook(ctx, d, addrs, append([]int{0}, pool.accounts[:active]...))
		if err != nil {
			return nil, fmt.Errorf("delegation: %w", err)
		}
		b.plan(rand.New(rand.NewPCG(uint64(round), uint64(ti))), round, pool, active, joiners, c.holders)
		books, calls = append(books, b), append(calls, b.calls...)
		out.Moves = append(out.Moves, b.moves...)
	}
	rs, err := c.sealCalls(ctx, calls)
	if err != nil {
		return nil, fmt.Errorf("delegation: %w", err)
	}
	pool.joined += joiners
	out.Receipts = rs
	for _, b := range books {
		out.Want[b.d.Token] = b.want()
	}
	return out, nil
}

// setUpDelegation makes the delegation scene's pool the first time: the
// dev accounts past sceneAccounts, then Options.Delegators further keys,
// each sent 1 ETH by account 0.
func (c *Chain) setUpDelegation(ctx context.Context) error {
	if c.delegation != nil {
		return nil
	}
	// The governance scenes' accounts come first, staging proposers
	// included (alphaProposers adds them past the dev accounts).
	if _, err := c.alphaProposers(ctx, sceneAccounts()); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := &delegationPool{}
	for i := sceneAccounts(); i < c.holders; i++ {
		p.accounts = append(p.accounts, i)
	}
	p.crowd = len(p.accounts)
	first := len(c.addrs)
	for i := first; i < first+c.delegators; i++ {
		key := DevKey(i)
		c.keys, c.addrs = append(c.keys, key), append(c.addrs, crypto.PubkeyToAddress(key.PublicKey))
		if err := c.sendValueLocked(ctx, 0, c.addrs[i], ether); err != nil {
			c.keys, c.addrs = c.keys[:first], c.addrs[:first]
			c.commitLocked()
			return err
		}
		p.accounts = append(p.accounts, i)
	}
	c.commitLocked()
	c.delegation = p
	return nil
}

// votingTokens returns one deployment per voting token (dev-bravo votes
// with dev-oz's).
func (c *Chain) votingTokens() []*Deployment {
	var ds []*Deployment
	seen := map[common.Address]bool{}
	for _, d := range c.Deployments() {
		if !seen[d.Token] {
			seen[d.Token] = true
			ds = append(ds, d)
		}
	}
	return ds
}

// delegationBook is one token's accounts as the round found them and as
// its moves leave them.
type delegationBook struct {
	d      *Deployment
	addrs  []common.Address
	supply *big.Int
	// start is the balance, delegate and votes before the round of every
	// account of the round, and of their delegates.
	start map[common.Address]Holding
	// bal and del are what the moves leave the accounts of the round
	// with; spend is what a sender may still send (its balance before the
	// round, less what it sent).
	bal, spend map[int]*big.Int
	del        map[int]common.Address
	moved      map[int]bool // accounts whose delegate a move set
	moves      []DelegationMove
	calls      []txCall
}

// readBook reads d's token for the accounts ids (indexes of addrs) and
// for their delegates.
func (c *Chain) readBook(ctx context.Context, d *Deployment, addrs []common.Address, ids []int) (*delegationBook, error) {
	b := &delegationBook{d: d, addrs: addrs, start: map[common.Address]Holding{},
		bal: map[int]*big.Int{}, spend: map[int]*big.Int{}, del: map[int]common.Address{}, moved: map[int]bool{}}
	out, err := c.call(ctx, "GovToken", d.Token, "totalSupply")
	if err != nil {
		return nil, err
	}
	b.supply = out[0].(*big.Int)
	read := func(a common.Address) (Holding, error) {
		if h, ok := b.start[a]; ok {
			return h, nil
		}
		var h Holding
		var err error
		if h.Balance, err = c.Balance(ctx, d, a); err != nil {
			return h, err
		}
		if h.Delegate, err = c.Delegates(ctx, d, a); err != nil {
			return h, err
		}
		if h.Votes, err = c.TokenVotes(ctx, d, a); err != nil {
			return h, err
		}
		b.start[a] = h
		return h, nil
	}
	for _, i := range ids {
		h, err := read(addrs[i])
		if err != nil {
			return nil, err
		}
		b.bal[i], b.spend[i], b.del[i] = new(big.Int).Set(h.Balance), new(big.Int).Set(h.Balance), h.Delegate
	}
	// A delegate from outside the round (a governance account that a test
	// had a dev account delegate to, say) loses votes when they move.
	for _, i := range ids {
		if del := b.del[i]; del != (common.Address{}) {
			if _, err := read(del); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// plan draws the round's moves on the book's token: accounts
// pool.accounts[:active] take part, the last joiners of which are new.
func (b *delegationBook) plan(rng *rand.Rand, round int, pool *delegationPool, active, joiners, holders int) {
	ids := pool.accounts[:active]
	holdout := map[int]bool{}
	for k, i := range ids {
		holdout[i] = pool.holdout(k)
	}
	zero := common.Address{}
	// pick returns one of ids that ok accepts, drawn at random.
	pick := func(ok func(i int) bool) (int, bool) {
		var fit []int
		for _, i := range ids {
			if ok(i) {
				fit = append(fit, i)
			}
		}
		if len(fit) == 0 {
			return 0, false
		}
		return fit[rng.IntN(len(fit))], true
	}
	free := func(i int) bool { return !holdout[i] && !b.moved[i] }
	share := func(i int) *big.Int { // a tenth to two fifths of what i may send
		return new(big.Int).Div(new(big.Int).Mul(b.spend[i], big.NewInt(int64(10+rng.IntN(31)))), big.NewInt(100))
	}
	canSend := func(i int) bool { return b.spend[i].Cmp(big.NewInt(100)) >= 0 }

	// Newcomers: a stake of 0.1 to 0.9 thousandths of a dev account's
	// share each, which they hold without votes until they delegate.
	unit := new(big.Int).Div(b.supply, big.NewInt(int64(holders)*1000))
	for k := active - joiners; k < active; k++ {
		stake := new(big.Int).Mul(unit, big.NewInt(int64(1+(k-pool.crowd)%9)))
		b.transfer(MoveJoin, 0, ids[k], stake)
	}
	// Holders that have not delegated (last round's newcomers, an account
	// that undelegated) do: to themselves, or one time in three to another.
	for _, a := range ids[:active-joiners] {
		if !free(a) || b.del[a] != zero {
			continue
		}
		to := a
		if rng.IntN(3) == 0 {
			if o, ok := pick(func(i int) bool { return !holdout[i] && i != a }); ok {
				to = o
			}
		}
		b.delegate(a, to)
	}
	// A re-delegation chain: a delegates to x, and x to y; a's votes stay
	// with x, whose own go to y.
	if a, ok := pick(free); ok {
		if x, ok := pick(func(i int) bool { return free(i) && i != a && b.addrs[i] != b.del[a] }); ok {
			if y, ok := pick(func(i int) bool { return !holdout[i] && i != a && i != x && b.addrs[i] != b.del[x] }); ok {
				b.delegate(a, x)
				b.delegate(x, y)
			}
		}
	}
	// Back to self-delegation.
	if a, ok := pick(func(i int) bool { return free(i) && b.del[i] != zero && b.del[i] != b.addrs[i] }); ok {
		b.delegate(a, a)
	}
	// A transfer between holders with different delegates.
	if s, ok := pick(func(i int) bool { return canSend(i) && b.del[i] != zero }); ok {
		if r, ok := pick(func(i int) bool { return i != s && b.del[i] != zero && b.del[i] != b.del[s] }); ok {
			b.transfer(MoveTransfer, s, r, share(s))
		}
	}
	// A transfer to a holder that has not delegated.
	if s, ok := pick(func(i int) bool { return canSend(i) && b.del[i] != zero }); ok {
		if r, ok := pick(func(i int) bool { return i != s && b.del[i] == zero }); ok {
			b.transfer(MoveToHolder, s, r, share(s))
		}
	}
	// By turns: such a holder sends tokens to a delegator, whose delegate
	// gains the power; or a delegator undelegates.
	if round%2 == 0 {
		if s, ok := pick(func(i int) bool { return canSend(i) && b.del[i] == zero }); ok {
			if r, ok := pick(func(i int) bool { return i != s && b.del[i] != zero }); ok {
				b.transfer(MoveFromHolder, s, r, share(s))
			}
		}
	} else if a, ok := pick(func(i int) bool { return free(i) && b.del[i] != zero }); ok {
		b.delegate(a, -1)
	}
}

// delegate has account from delegate to account to (-1: the zero address).
func (b *delegationBook) delegate(from, to int) {
	var addr common.Address
	if to >= 0 {
		addr = b.addrs[to]
	}
	prev := b.del[from]
	kind := MoveRedelegate
	switch {
	case to < 0:
		kind = MoveUndelegate
	case to == from:
		kind = MoveSelfDelegate
	case prev == (common.Address{}) || prev == b.addrs[from]:
		kind = MoveDelegate
	}
	b.del[from], b.moved[from] = addr, true
	b.moves = append(b.moves, DelegationMove{Kind: kind, Token: b.d.Token, From: b.addrs[from], To: addr})
	b.calls = append(b.calls, txCall{from: from, artifact: "GovToken", to: b.d.Token, method: "delegate", args: []any{addr}, gas: delegationGas})
}

// transfer sends amount from account from to account to.
func (b *delegationBook) transfer(kind string, from, to int, amount *big.Int) {
	b.spend[from].Sub(b.spend[from], amount)
	b.bal[from].Sub(b.bal[from], amount)
	b.bal[to].Add(b.bal[to], amount)
	b.moves = append(b.moves, DelegationMove{Kind: kind, Token: b.d.Token, From: b.addrs[from], To: b.addrs[to], Amount: amount})
	b.calls = append(b.calls, txCall{from: from, artifact: "GovToken", to: b.d.Token, method: "transfer", args: []any{b.addrs[to], amount}, gas: delegationGas})
}

// want is what the token answers after the round for every account of
// the book: a delegate's votes are what they were, less what the
// round's accounts that delegated to it held before, plus what those that
// delegate to it after hold.
func (b *delegationBook) want() map[common.Address]Holding {
	votes := map[common.Address]*big.Int{}
	for a, h := range b.start {
		votes[a] = new(big.Int).Set(h.Votes)
	}
	for i, del := range b.del {
		h := b.start[b.addrs[i]]
		if v := votes[h.Delegate]; v != nil {
			v.Sub(v, h.Balance)
		}
		if v := votes[del]; v != nil {
			v.Add(v, b.bal[i])
		}
	}
	w := map[common.Address]Holding{}
	for a, h := range b.start {
		w[a] = Holding{Balance: h.Balance, Delegate: h.Delegate, Votes: votes[a]}
	}
	for i, del := range b.del {
		w[b.addrs[i]] = Holding{Balance: b.bal[i], Delegate: del, Votes: votes[b.addrs[i]]}
	}
	return w
}
