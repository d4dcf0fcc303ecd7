package devchain

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/govgate/govgate/core"
)

// Governance parameters of the deployed DAOs. dev-oz and dev-bravo keep
// short windows (tests walk through them block by block); the newer DAOs
// give govgate dev, at one block a second, proposals that stay pending or
// active for minutes.
const (
	votingDelay         = 1  // blocks
	votingPeriod        = 10 // blocks
	lateQuorumExtension = 3  // blocks
	quorumPercent       = 4  // of the token supply
	timelockDelay       = 60 // seconds
	tokenSupply         = 1_000_000

	oz4VotingDelay         = 1   // blocks
	oz4VotingPeriod        = 150 // blocks
	oz4LateQuorumExtension = 20  // blocks

	timeVotingDelay         = 60  // seconds
	timeVotingPeriod        = 300 // seconds
	timeLateQuorumExtension = 60  // seconds

	// compoundTimelockDelay is the MINIMUM_DELAY of Compound's Timelock
	// (Uniswap's copy); its GRACE_PERIOD is compoundGracePeriod.
	compoundTimelockDelay = 2 * 24 * time.Hour
	compoundGracePeriod   = 14 * 24 * time.Hour

	uniSupply = 1_000_000_000 // UNI, minted by the Uni constructor

	// clockOffset is how far dev-offset-clock's token clock runs ahead of
	// the chain's block number, as an L2's layer-1 block number does.
	clockOffset = 1_000_000
)

// deploy deploys the five DAOs, the Box target and the BatchVoter, then
// gives every account an equal share of each governance token,
// self-delegated.
func (c *Chain) deploy(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.deployOZ(ctx); err != nil {
		return err
	}
	if err := c.deployOZ4(ctx); err != nil {
		return err
	}
	if err := c.deployOZTime(ctx); err != nil {
		return err
	}
	if err := c.deployAlpha(ctx); err != nil {
		return err
	}
	if err := c.deployCounting(ctx); err != nil {
		return err
	}
	var err error
	if c.Box, _, err = c.deployLocked(ctx, "Box"); err != nil {
		return err
	}
	if c.batch, _, err = c.deployLocked(ctx, "BatchVoter"); err != nil {
		return err
	}
	if err := c.deployActionTargets(ctx); err != nil {
		return err
	}
	tokens := []struct {
		artifact string
		addr     common.Address
		supply   *big.Int
	}{
		{"GovToken", c.OZ.Token, tokens(tokenSupply)},
		{"OZ4Token", c.OZ4.Token, tokens(tokenSupply)},
		{"TimeGovToken", c.OZTime.Token, tokens(tokenSupply)},
		{"Uni", c.Alpha.Token, tokens(uniSupply)},
		{"GovToken", c.OZFrac.Token, tokens(tokenSupply)},
		{"ExtGovToken", c.OZOverride.Token, tokens(tokenSupply)},
		{"OffsetGovToken", c.OZOffset.Token, tokens(tokenSupply)},
	}
	for _, t := range tokens {
		share := new(big.Int).Div(t.supply, big.NewInt(int64(len(c.addrs))))
		for i := 1; i < len(c.addrs); i++ {
			if _, err := c.send(ctx, 0, t.artifact, t.addr, "transfer", c.addrs[i], share); err != nil {
				return err
			}
		}
	}
	c.commitLocked()
	for _, t := range tokens {
		for i := range c.addrs {
			to := c.addrs[i]
			if t.addr == c.OZOverride.Token && c.overrides() && (i == overrideDelegators[0] || i == overrideDelegators[1]) {
				// Delegators whose delegate's votes they can override.
				to = c.addrs[0]
			}
			if _, err := c.send(ctx, i, t.artifact, t.addr, "delegate", to); err != nil {
				return err
			}
		}
	}
	c.commitLocked()
	// GovernorAlpha counts a proposer's votes at the block before, and a
	// gas estimate runs at the head: one more block lets account 0 propose
	// there at once.
	c.commitLocked()
	return nil
}

// tokens is n whole tokens of 18 decimals.
func tokens(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), ether) }

// deployOZ deploys dev-oz, an OpenZeppelin 5.x Governor behind a
// TimelockController, and dev-bravo, the GovernorBravo look-alike; both
// count votes of GovToken.
func (c *Chain) deployOZ(ctx context.Context) error {
	token, _, err := c.deployLocked(ctx, "GovToken", c.addrs[0], tokens(tokenSupply))
	if err != nil {
		return err
	}
	timelock, oz, ozBlock, err := c.deployOZ5Governor(ctx, "OZGovernor", "Govgate Dev Governor", token, votingDelay, votingPeriod, lateQuorumExtension)
	if err != nil {
		return err
	}
	quorumVotes := tokens(tokenSupply * quorumPercent / 100)
	bravo, bravoBlock, err := c.deployLocked(ctx, "BravoGovernor", token,
		big.NewInt(votingDelay), big.NewInt(votingPeriod), big.NewInt(timelockDelay), quorumVotes)
	if err != nil {
		return err
	}
	c.OZ = &Deployment{
		Slug: "dev-oz", Name: "Devchain OpenZeppelin Governor", Kind: core.KindOZGovernor, Clock: core.ClockBlockNumber,
		Governor: oz, Token: token, Timelock: timelock, StartBlock: ozBlock,
		VotingDelay: votingDelay, VotingPeriod: votingPeriod, TimelockDelay: timelockDelay * time.Second,
		artifact: "OZGovernor", govName: "Govgate Dev Governor",
	}
	c.Bravo = &Deployment{
		Slug: "dev-bravo", Name: "Devchain Bravo Governor", Kind: core.KindGovernorBravo, Clock: core.ClockBlockNumber,
		Governor: bravo, Token: token, StartBlock: bravoBlock,
		VotingDelay: votingDelay, VotingPeriod: votingPeriod, TimelockDelay: timelockDelay * time.Second,
		artifact: "BravoGovernor",
	}
	return nil
}

// deployOZ5Governor deploys a TimelockController and an OpenZeppelin 5.x
// governor (artifact OZGovernor, FractionalGovernor or OverridableGovernor)
// that proposes to and cancels in it.
func (c *Chain) deployOZ5Governor(ctx context.Context, artifact, name string, token common.Address, delay, period, extension uint64) (timelock, governor common.Address, block uint64, err error) {
	timelock, _, err = c.deployLocked(ctx, "Timelock", big.NewInt(timelockDelay), []common.Address{}, []common.Address{{}}, c.addrs[0])
	if err != nil {
		return
	}
	governor, block, err = c.deployLocked(ctx, artifact, name, token, timelock,
		new(big.Int).SetUint64(delay), uint32(period), big.NewInt(quorumPercent), new(big.Int).SetUint64(extension))
	if err != nil {
		return
	}
	for _, r := range []string{"PROPOSER_ROLE", "CANCELLER_ROLE"} {
		if _, err = c.transactLocked(ctx, 0, "Timelock", timelock, "grantRole", role(r), governor); err != nil {
			return
		}
	}
	return
}

// deployOZ4 deploys dev-oz4: OpenZeppelin 4.9's Governor with
// GovernorTimelockCompound in front of Compound's Timelock (Uniswap's
// published build), whose admin is the governor from the start: the
// timelock is deployed with the address the governor will get.
func (c *Chain) deployOZ4(ctx context.Context) error {
	token, _, err := c.deployLocked(ctx, "OZ4Token", c.addrs[0], tokens(tokenSupply))
	if err != nil {
		return err
	}
	const name = "Govgate Dev Governor 4"
	timelock, governor, block, err := c.deployBehindCompoundTimelock(ctx, "OZ4Governor", func(timelock common.Address) []any {
		return []any{name, token, timelock, big.NewInt(oz4VotingDelay), big.NewInt(oz4VotingPeriod), big.NewInt(quorumPercent), uint64(oz4LateQuorumExtension)}
	})
	if err != nil {
		return err
	}
	c.OZ4 = &Deployment{
		Slug: "dev-oz4", Name: "Devchain OpenZeppelin 4.9 Governor", Kind: core.KindOZGovernor, Clock: core.ClockBlockNumber,
		Governor: governor, Token: token, Timelock: timelock, StartBlock: block,
		VotingDelay: oz4VotingDelay, VotingPeriod: oz4VotingPeriod, TimelockDelay: compoundTimelockDelay,
		artifact: "OZ4Governor", govName: name,
	}
	return nil
}

// deployBehindCompoundTimelock deploys Compound's Timelock with admin set to
// the address that account 0's next deployment gets, then deploys the
// governor artifact with args(timelock) there.
func (c *Chain) deployBehindCompoundTimelock(ctx context.Context, artifact string, args func(timelock common.Address) []any) (timelock, governor common.Address, block uint64, err error) {
	nonce, err := c.nextNonce(ctx, 0)
	if err != nil {
		return
	}
	want := crypto.CreateAddress(c.addrs[0], nonce.Uint64()+1)
	timelock, _, err = c.deployLocked(ctx, "UniswapTimelock", want, big.NewInt(int64(compoundTimelockDelay/time.Second)))
	if err != nil {
		return
	}
	governor, block, err = c.deployLocked(ctx, artifact, args(timelock)...)
	if err != nil {
		return
	}
	if governor != want {
		err = fmt.Errorf("%s deployed at %s, not at the timelock's admin %s", artifact, governor, want)
	}
	return
}

// deployOZTime deploys dev-oz-time: the OZGovernor of dev-oz on a token
// whose ERC-6372 clock is the block timestamp, so that its voting delay,
// period and late-quorum extension count seconds.
func (c *Chain) deployOZTime(ctx context.Context) error {
	token, _, err := c.deployLocked(ctx, "TimeGovToken", c.addrs[0], tokens(tokenSupply))
	if err != nil {
		return err
	}
	const name = "Govgate Dev Time Governor"
	timelock, governor, block, err := c.deployOZ5Governor(ctx, "OZGovernor", name, token, timeVotingDelay, timeVotingPeriod, timeLateQuorumExtension)
	if err != nil {
		return err
	}
	c.OZTime = &Deployment{
		Slug: "dev-oz-time", Name: "Devchain OpenZeppelin Governor (timestamp clock)", Kind: core.KindOZGovernor, Clock: core.ClockTimestamp,
		Governor: governor, Token: token, Timelock: timelock, StartBlock: block,
		VotingDelay: timeVotingDelay, VotingPeriod: timeVotingPeriod, TimelockDelay: timelockDelay * time.Second,
		artifact: "OZGovernor", govName: name,
	}
	return nil
}

// deployAlpha deploys dev-alpha: Uniswap's GovernorAlpha, Uni and Timelock
// as Uniswap published them. Their parameters are constants of the
// bytecode, read back here.
func (c *Chain) deployAlpha(ctx context.Context) error {
	head, err := c.client.HeaderByNumber(ctx, nil)
	if err != nil {
		return err
	}
	// Uni refuses a first mint date in the past; there is no second mint here.
	mintingAllowedAfter := new(big.Int).SetUint64(head.Time + 365*24*3600)
	uni, _, err := c.deployLocked(ctx, "Uni", c.addrs[0], c.addrs[0], mintingAllowedAfter)
	if err != nil {
		return err
	}
	timelock, governor, block, err := c.deployBehindCompoundTimelock(ctx, "GovernorAlpha", func(timelock common.Address) []any {
		return []any{timelock, uni}
	})
	if err != nil {
		return err
	}
	var params [2]uint64
	for i, m := range []string{"votingDelay", "votingPeriod"} {
		out, err := c.call(ctx, "GovernorAlpha", governor, m)
		if err != nil {
			return err
		}
		params[i] = out[0].(*big.Int).Uint64()
	}
	c.Alpha = &Deployment{
		Slug: "dev-alpha", Name: "Devchain GovernorAlpha (Uniswap)", Kind: core.KindGovernorAlpha, Clock: core.ClockBlockNumber,
		Governor: governor, Token: uni, Timelock: timelock, StartBlock: block,
		VotingDelay: params[0], VotingPeriod: params[1], TimelockDelay: compoundTimelockDelay,
		artifact: "GovernorAlpha",
	}
	return nil
}

// overrideDelegators are the dev accounts that delegate their
// dev-oz-override votes to account 0 rather than to themselves, so that
// they can override its vote. The delegation scene leaves them alone.
var overrideDelegators = [2]int{4, 5}

// overrides reports whether the chain has the dev accounts that override
// on dev-oz-override (Options.Accounts of 6 or more); with fewer, its
// proposals get plain votes only.
func (c *Chain) overrides() bool { return c.holders > overrideDelegators[1] }

// deployCounting deploys the DAOs of the other counting modules and
// clocks, each an OpenZeppelin 5.x governor of Governor.sol.in behind its
// own TimelockController, with dev-oz's parameters: dev-oz-fractional
// (GovernorCountingFractional on a GovToken), dev-oz-override
// (GovernorCountingOverridable on an ExtGovToken) and dev-offset-clock
// (GovernorCountingSimple on an OffsetGovToken, whose clock runs
// clockOffset ahead of the block number).
func (c *Chain) deployCounting(ctx context.Context) error {
	for _, spec := range []struct {
		dst                     **Deployment
		slug, name, govName     string
		artifact, tokenArtifact string
		offset                  uint64
	}{
		{&c.OZFrac, "dev-oz-fractional", "Devchain OpenZeppelin Governor (fractional votes)", "Govgate Dev Fractional Governor", "FractionalGovernor", "GovToken", 0},
		{&c.OZOverride, "dev-oz-override", "Devchain OpenZeppelin Governor (overridable votes)", "Govgate Dev Override Governor", "OverridableGovernor", "ExtGovToken", 0},
		{&c.OZOffset, "dev-offset-clock", "Devchain OpenZeppelin Governor (offset clock, as on an L2)", "Govgate Dev Offset Governor", "OZGovernor", "OffsetGovToken", clockOffset},
	} {
		args := []any{c.addrs[0], tokens(tokenSupply)}
		if spec.offset > 0 {
			args = append(args, new(big.Int).SetUint64(spec.offset))
		}
		token, _, err := c.deployLocked(ctx, spec.tokenArtifact, args...)
		if err != nil {
			return err
		}
		timelock, governor, block, err := c.deployOZ5Governor(ctx, spec.artifact, spec.govName, token, votingDelay, votingPeriod, lateQuorumExtension)
		if err != nil {
			return err
		}
		*spec.dst = &Deployment{
			Slug: spec.slug, Name: spec.name, Kind: core.KindOZGovernor, Clock: core.ClockBlockNumber,
			Governor: governor, Token: token, Timelock: timelock, StartBlock: block,
			VotingDelay: votingDelay, VotingPeriod: votingPeriod, TimelockDelay: timelockDelay * time.Second,
			ClockOffset: spec.offset,
			artifact:    spec.artifact, govName: spec.govName,
		}
	}
	return nil
}
