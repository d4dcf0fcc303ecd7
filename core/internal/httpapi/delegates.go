package httpapi

import (
	"context"
	"log/slog"
	"math/big"
	"net/http"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
)

// DelegateReader is what the delegate routes need from the store.
type DelegateReader interface {
	ListDelegates(ctx context.Context, dao, sortBy, before string, limit int) (core.DelegatePage, error)
	Delegate(ctx context.Context, dao, address string) (core.Delegate, bool, error)
	ListDelegators(ctx context.Context, dao, delegate, before string, limit int) ([]core.Delegation, string, error)
	Delegation(ctx context.Context, dao, account string) (core.Delegation, bool, error)
	ListVotesBy(ctx context.Context, dao, voter string, p core.Page) ([]core.VoteWithProposal, int64, error)
	PowerAt(ctx context.Context, dao, clock string, at uint64) (string, error)
	ListProposals(ctx context.Context, dao, state string, p core.Page) ([]core.Proposal, int64, error)
	PowerOfAt(ctx context.Context, dao, clock, account string, at uint64) (power, delegate string, err error)
	PowerHistory(ctx context.Context, dao, clock, account string, before uint64, limit int) ([]core.PowerChange, uint64, error)
	Governor(ctx context.Context, dao string) (core.GovernorInfo, bool, error)
}

// clockOf returns the unit of a DAO's timepoints: its governor's
// ERC-6372 clock as the indexer read it, else the clock its proposals
// were indexed with, else block numbers (nothing indexed yet).
func clockOf(ctx context.Context, r DelegateReader, dao string) (string, error) {
	g, ok, err := r.Governor(ctx, dao)
	if err != nil {
		return "", err
	}
	if ok && g.ClockMode != "" {
		return g.ClockMode, nil
	}
	props, _, err := r.ListProposals(ctx, dao, "", core.Page{Limit: 1})
	if err != nil {
		return "", err
	}
	if len(props) > 0 && props[0].Clock != "" {
		return props[0].Clock, nil
	}
	return core.ClockBlockNumber, nil
}

// share is part over total, 0 to 1 (0 when total is 0).
func share(part, total string) float64 {
	p, ok1 := new(big.Int).SetString(part, 10)
	t, ok2 := new(big.Int).SetString(total, 10)
	if !ok1 || !ok2 || t.Sign() <= 0 {
		return 0
	}
	f, _ := new(big.Rat).SetFrac(p, t).Float64()
	return min(f, 1)
}

// atOf reads ?at=, a timepoint of the governor's clock; ok is false after
// writing the error. set is false without one.
func atOf(c *gin.Context, log *slog.Logger) (at uint64, set, ok bool) {
	v := c.Query("at")
	if v == "" {
		return 0, false, true
	}
	n, err := strconv.ParseUint(v, 10, 63)
	if err != nil {
		writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "at must be a timepoint of the governor's clock: a block number, or a Unix time on a timestamp clock"))
		return 0, false, false
	}
	return n, true, true
}

// delegatePage is the body of GET /{dao}/delegates.
type delegatePage struct {
	Items      []core.Delegate `json:"items"`
	NextBefore *string         `json:"nextBefore"`
	// TotalVotingPower is the DAO's total delegated voting power.
	TotalVotingPower string `json:"totalVotingPower"`
}

// snapshotPower is one proposal's turnout against the power delegated at
// its snapshot.
type snapshotPower struct {
	ProposalID       string  `json:"proposalId"`
	Title            string  `json:"title"`
	State            string  `json:"state"`
	Snapshot         uint64  `json:"snapshot"`
	VotingPowerAt    string  `json:"votingPowerAtSnapshot"`
	VotesCast        string  `json:"votesCast"`
	Turnout          float64 `json:"turnout"`
	QuorumAtSnapshot *string `json:"quorum"`
}

// DelegateRoutes returns the delegate routes for APIConfig.Routes:
// GET /{dao}/delegates, /{dao}/delegates/{address}, /{dao}/accounts/{address}
// and /{dao}/power.
func DelegateRoutes(r DelegateReader, daos core.DAOCatalog, log *slog.Logger) func(e *gin.Engine) {
	dao := daoParam(daos, log)
	// account reads the routes' {dao} and {address}, in checksum form.
	account := func(c *gin.Context) (slug, addr string, ok bool) {
		if slug, ok = dao(c); !ok {
			return "", "", false
		}
		a := c.Param("address")
		if !common.IsHexAddress(a) {
			writeError(c, log, core.Errorf(core.ECodeNotFound, "%q is not an address (0x and 40 hex digits)", a))
			return "", "", false
		}
		return slug, common.HexToAddress(a).Hex(), true
	}
	limitOf := func(c *gin.Context) (int, bool) {
		v := c.Query("limit")
		if v == "" {
			return 0, true
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "limit must be an integer from 1 to 500"))
			return 0, false
		}
		return n, true
	}
	return func(e *gin.Engine) {
		e.GET("/:dao/delegates", func(c *gin.Context) {
			slug, ok := dao(c)
			if !ok {
				return
			}
			limit, ok := limitOf(c)
			if !ok {
				return
			}
			sortBy := c.DefaultQuery("sort", core.SortVotingPower)
			page, err := r.ListDelegates(c.Request.Context(), slug, sortBy, c.Query("before"), limit)
			if err != nil {
				writeError(c, log, err)
				return
			}
			body := delegatePage{Items: page.Items, TotalVotingPower: page.TotalPower}
			if body.Items == nil {
				body.Items = []core.Delegate{}
			}
			if page.Next != "" {
				body.NextBefore = &page.Next
			}
			c.JSON(http.StatusOK, body)
		})
		e.GET("/:dao/delegates/:address", func(c *gin.Context) {
			slug, addr, ok := account(c)
			if !ok {
				return
			}
			limit, ok := limitOf(c)
			if !ok {
				return
			}
			var votesPage core.Page
			votesPage.Limit = limit
			if v := c.Query("votesBefore"); v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 1 {
					writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "votesBefore must be a positive integer"))
					return
				}
				votesPage.Before = n
			}
			ctx := c.Request.Context()
			at, atSet, ok := atOf(c, log)
			if !ok {
				return
			}
			d, found, err := r.Delegate(ctx, slug, addr)
			if err != nil {
				writeError(c, log, err)
				return
			}
			if !found {
				writeError(c, log, core.Errorf(core.ECodeNotFound, "%s never held delegated power, had delegators or voted in %s", addr, slug))
				return
			}
			if atSet {
				// As of a past timepoint: the power the token's
				// getPastVotes answers there, and its share of the
				// power delegated then.
				clock, err := clockOf(ctx, r, slug)
				if err != nil {
					writeError(c, log, err)
					return
				}
				if d.VotingPower, _, err = r.PowerOfAt(ctx, slug, clock, addr, at); err != nil {
					writeError(c, log, err)
					return
				}
				total, err := r.PowerAt(ctx, slug, clock, at)
				if err != nil {
					writeError(c, log, err)
					return
				}
				d.Share = share(d.VotingPower, total)
			}
			delegators, nextDelegator, err := r.ListDelegators(ctx, slug, addr, c.Query("delegatorsBefore"), limit)
			if err != nil {
				writeError(c, log, err)
				return
			}
			votes, nextVote, err := r.ListVotesBy(ctx, slug, addr, votesPage)
			if err != nil {
				writeError(c, log, err)
				return
			}
			if delegators == nil {
				delegators = []core.Delegation{}
			}
			dl := gin.H{"items": delegators, "nextBefore": nil}
			if nextDelegator != "" {
				dl["nextBefore"] = nextDelegator
			}
			body := gin.H{"delegate": d, "delegators": dl, "votes": listBody(votes, nextVote)}
			if atSet {
				body["at"] = at
			}
			c.JSON(http.StatusOK, body)
		})
		e.GET("/:dao/accounts/:address", func(c *gin.Context) {
			slug, addr, ok := account(c)
			if !ok {
				return
			}
			ctx := c.Request.Context()
			at, atSet, ok := atOf(c, log)
			if !ok {
				return
			}
			if atSet {
				// As of a past timepoint of the governor's clock: what the
				// token's getPastVotes answers there, and whom the account
				// delegated to then.
				clock, err := clockOf(ctx, r, slug)
				if err != nil {
					writeError(c, log, err)
					return
				}
				power, delegate, err := r.PowerOfAt(ctx, slug, clock, addr, at)
				if err != nil {
					writeError(c, log, err)
					return
				}
				var to *string
				if delegate != "" && common.HexToAddress(delegate) != (common.Address{}) {
					to = &delegate
				}
				c.JSON(http.StatusOK, gin.H{"dao": slug, "address": addr, "clock": clock, "at": at, "votingPower": power, "delegatedTo": to})
				return
			}
			body := gin.H{"dao": slug, "address": addr, "delegation": nil, "delegate": nil}
			if d, found, err := r.Delegation(ctx, slug, addr); err != nil {
				writeError(c, log, err)
				return
			} else if found {
				body["delegation"] = d
			}
			if d, found, err := r.Delegate(ctx, slug, addr); err != nil {
				writeError(c, log, err)
				return
			} else if found {
				body["delegate"] = d
			}
			c.JSON(http.StatusOK, body)
		})
		e.GET("/:dao/accounts/:address/history", func(c *gin.Context) {
			slug, addr, ok := account(c)
			if !ok {
				return
			}
			limit, ok := limitOf(c)
			if !ok {
				return
			}
			var before uint64
			if v := c.Query("before"); v != "" {
				n, err := strconv.ParseUint(v, 10, 63)
				if err != nil || n == 0 {
					writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "before must be a positive block number"))
					return
				}
				before = n
			}
			ctx := c.Request.Context()
			clock, err := clockOf(ctx, r, slug)
			if err != nil {
				writeError(c, log, err)
				return
			}
			items, next, err := r.PowerHistory(ctx, slug, clock, addr, before, limit)
			if err != nil {
				writeError(c, log, err)
				return
			}
			if items == nil {
				items = []core.PowerChange{}
			}
			body := gin.H{"dao": slug, "address": addr, "clock": clock, "items": items, "nextBefore": nil}
			if next > 0 {
				body["nextBefore"] = next
			}
			c.JSON(http.StatusOK, body)
		})
		e.GET("/:dao/power", func(c *gin.Context) {
			slug, ok := dao(c)
			if !ok {
				return
			}
			p, err := pageOf(c)
			if err != nil {
				writeError(c, log, err)
				return
			}
			ctx := c.Request.Context()
			props, next, err := r.ListProposals(ctx, slug, "", p)
			if err != nil {
				writeError(c, log, err)
				return
			}
			clock := core.ClockBlockNumber
			if len(props) > 0 && props[0].Clock != "" {
				clock = props[0].Clock
			}
			body := gin.H{"dao": slug, "clock": clock, "at": nil}
			at := uint64(1<<63 - 1)
			if v := c.Query("at"); v != "" {
				n, err := strconv.ParseUint(v, 10, 63)
				if err != nil {
					writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "at must be a block number (or a Unix time on a timestamp clock)"))
					return
				}
				at = n
				body["at"] = n
			}
			total, err := r.PowerAt(ctx, slug, clock, at)
			if err != nil {
				writeError(c, log, err)
				return
			}
			body["totalVotingPower"] = total
			snaps := make([]snapshotPower, 0, len(props))
			for _, pr := range props {
				atSnap, err := r.PowerAt(ctx, slug, pr.Clock, pr.VoteStart)
				if err != nil {
					writeError(c, log, err)
					return
				}
				cast := new(big.Int)
				for _, v := range []string{pr.ForVotes, pr.AgainstVotes, pr.AbstainVotes} {
					n, _ := new(big.Int).SetString(v, 10)
					if n != nil {
						cast.Add(cast, n)
					}
				}
				sp := snapshotPower{ProposalID: pr.ProposalID, Title: pr.Title, State: pr.State, Snapshot: pr.VoteStart,
					VotingPowerAt: atSnap, VotesCast: cast.String(), QuorumAtSnapshot: pr.Quorum}
				if tot, ok := new(big.Int).SetString(atSnap, 10); ok && tot.Sign() > 0 {
					sp.Turnout, _ = new(big.Rat).SetFrac(cast, tot).Float64()
				}
				snaps = append(snaps, sp)
			}
			body["proposals"] = listBody(snaps, next)
			c.JSON(http.StatusOK, body)
		})
	}
}
