package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
)

// ProposalReader is what the proposal routes need from the store.
type ProposalReader interface {
	ListProposals(ctx context.Context, dao, state string, p core.Page) ([]core.Proposal, int64, error)
	Proposal(ctx context.Context, dao, id string) (core.Proposal, bool, error)
	ListVotes(ctx context.Context, dao, proposalID string, p core.Page) ([]core.Vote, int64, error)
	Timeline(ctx context.Context, dao, proposalID string) ([]core.TimelineEntry, error)
	VoteStats(ctx context.Context, p core.Proposal, quorumAbstain bool) (core.VoteStats, error)
	Governor(ctx context.Context, dao string) (core.GovernorInfo, bool, error)
}

// ProposalRoutes returns GET /proposals (every DAO's), GET /{dao}/proposals
// and GET /{dao}/proposals/{id} for APIConfig.Routes.
func ProposalRoutes(r ProposalReader, daos core.DAOCatalog, log *slog.Logger) func(e *gin.Engine) {
	dao := daoParam(daos, log)
	list := func(c *gin.Context, slug string) {
		p, err := pageOf(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		state := c.Query("state")
		if state != "" && !core.ValidProposalState(state) {
			writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "state must be one of %s", strings.Join(core.ProposalStates, ", ")))
			return
		}
		items, next, err := r.ListProposals(c.Request.Context(), slug, state, p)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, listBody(items, next))
	}
	return func(e *gin.Engine) {
		// Every DAO's proposals, newest first: ?state=active answers
		// "what is being voted on now" in one call.
		e.GET("/proposals", func(c *gin.Context) { list(c, "") })
		e.GET("/:dao/proposals", func(c *gin.Context) {
			if slug, ok := dao(c); ok {
				list(c, slug)
			}
		})
		e.GET("/:dao/proposals/:id", func(c *gin.Context) {
			slug, ok := dao(c)
			if !ok {
				return
			}
			id := c.Param("id")
			if _, err := strconv.ParseUint(id, 10, 64); err != nil && !isDecimal(id) {
				writeError(c, log, core.Errorf(core.ECodeNotFound, "proposal ids are decimal numbers"))
				return
			}
			p, err := pageOf(c)
			if err != nil {
				writeError(c, log, err)
				return
			}
			prop, found, err := r.Proposal(c.Request.Context(), slug, id)
			if err != nil {
				writeError(c, log, err)
				return
			}
			if !found {
				writeError(c, log, core.Errorf(core.ECodeNotFound, "no proposal %s in %s", id, slug))
				return
			}
			ctx := c.Request.Context()
			votes, next, err := r.ListVotes(ctx, slug, id, p)
			if err != nil {
				writeError(c, log, err)
				return
			}
			timeline, err := r.Timeline(ctx, slug, id)
			if err != nil {
				writeError(c, log, err)
				return
			}
			if timeline == nil {
				timeline = []core.TimelineEntry{}
			}
			// The governor's quorum rule: the quorum= of its
			// COUNTING_MODE (abstentions count on every OpenZeppelin
			// module), for votes only on Bravo and Alpha.
			g, _, err := r.Governor(ctx, slug)
			if err != nil {
				writeError(c, log, err)
				return
			}
			d, _ := daos.DAO(slug)
			stats, err := r.VoteStats(ctx, prop, g.QuorumCountsAbstain(d.Kind))
			if err != nil {
				writeError(c, log, err)
				return
			}
			c.JSON(http.StatusOK, gin.H{"proposal": prop, "timeline": timeline, "statistics": stats, "votes": listBody(votes, next)})
		})
	}
}

// daoParam returns a function that reads the {dao} of a route, writing
// unknown_dao and returning false for a slug the catalog does not have now.
func daoParam(daos core.DAOCatalog, log *slog.Logger) func(c *gin.Context) (string, bool) {
	return func(c *gin.Context) (string, bool) {
		slug := c.Param("dao")
		if _, ok := daos.DAO(slug); !ok {
			writeError(c, log, core.Errorf(core.ECodeUnknownDAO, "unknown dao %q (GET /daos lists them)", slug))
			return "", false
		}
		return slug, true
	}
}

// isDecimal reports whether s is a decimal number of at most 78 digits (a uint256).
func isDecimal(s string) bool {
	if s == "" || len(s) > 78 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// ActionDecoder decodes a proposal's calls (core/internal/calldata's
// Decoder, which caches its decodings).
type ActionDecoder interface {
	Actions(p core.Proposal) []core.Action
}

// WithActions returns r with every proposal it answers carrying its
// decoded actions. Decoding happens as proposals are served, not as they
// are stored, so that ABIs an operator adds later decode proposals indexed
// before; the decoder's cache makes that cost once per call.
func WithActions(r ProposalReader, d ActionDecoder) ProposalReader {
	return decodedProposals{ProposalReader: r, d: d}
}

type decodedProposals struct {
	ProposalReader
	d ActionDecoder
}

func (r decodedProposals) ListProposals(ctx context.Context, dao, state string, p core.Page) ([]core.Proposal, int64, error) {
	items, next, err := r.ProposalReader.ListProposals(ctx, dao, state, p)
	for i := range items {
		items[i].Actions = r.d.Actions(items[i])
	}
	return items, next, err
}

func (r decodedProposals) Proposal(ctx context.Context, dao, id string) (core.Proposal, bool, error) {
	p, ok, err := r.ProposalReader.Proposal(ctx, dao, id)
	if ok {
		p.Actions = r.d.Actions(p)
	}
	return p, ok, err
}
