package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"github.com/govgate/govgate/core"
)

// ProbeError is a DAO that its chain refutes: the governor holds no code,
// does not answer as its kind, or the voting token cannot be found. Field
// names the setting to fix as the configuration file and the admin API
// name it.
type ProbeError struct {
	DAO     string
	Field   string // "governor", "kind" or "token"
	Message string
}

func (e *ProbeError) Error() string { return fmt.Sprintf("dao %s: %s: %s", e.DAO, e.Field, e.Message) }

// probeABI is what Probe asks to tell the kinds apart. OpenZeppelin's
// IGovernor (4.3 on) answers COUNTING_MODE(); Bravo and Alpha answer
// quorumVotes(), and their public proposals(uint) getter returns ten words
// on Bravo (with abstainVotes) and nine on Alpha.
const probeABI = `[
{"type":"function","name":"COUNTING_MODE","stateMutability":"pure","inputs":[],"outputs":[{"name":"","type":"string"}]},
{"type":"function","name":"quorumVotes","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"proposals","stateMutability":"view","inputs":[{"name":"","type":"uint256"}],"outputs":[]},
{"type":"function","name":"getVotes","stateMutability":"view","inputs":[{"name":"account","type":"address"}],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"getCurrentVotes","stateMutability":"view","inputs":[{"name":"account","type":"address"}],"outputs":[{"name":"","type":"uint96"}]}
]`

var probeCalls = mustABI(probeABI)

// probe checks a DAO against its chain and reads what the indexer needs
// of its governor (governorInfo). A definite refusal is a *ProbeError;
// any other error (the node did not answer) is worth another try.
func (r *Runner) probe(ctx context.Context, d *daoState) (governorInfo, error) {
	ctx = withDAO(withPart(ctx, "probe"), d.dao.Slug)
	counting, err := checkKind(ctx, r.chain, d.dao, d.governor)
	if err != nil {
		return governorInfo{}, err
	}
	gi, err := caller{r: r, d: d, governor: d.governor}.info(ctx, counting)
	if err != nil {
		return gi, fmt.Errorf("governor: %w", err)
	}
	switch {
	case d.dao.Token != "":
		code, err := r.chain.CodeAt(ctx, gi.token, nil)
		if err != nil {
			return gi, fmt.Errorf("token code: %w", err)
		}
		if len(code) == 0 {
			return gi, &ProbeError{DAO: d.dao.Slug, Field: "token", Message: fmt.Sprintf("no contract at %s on chain %d", gi.token.Hex(), r.chainID)}
		}
		if err := checkToken(ctx, r.chain, gi.token); err != nil {
			var pe *ProbeError
			if errors.As(err, &pe) {
				pe.DAO = d.dao.Slug
			}
			return gi, err
		}
	case gi.token == (common.Address{}):
		return gi, &ProbeError{DAO: d.dao.Slug, Field: "token", Message: "the governor names no voting token (token(), uni() and comp() all fail): set token"}
	}
	return gi, nil
}

// Probe checks dao against its chain: the governor holds code and answers
// as its kind, and its voting token (configured, or the governor's
// token(), uni() or comp()) can be found. It returns a *ProbeError for a
// DAO the chain refutes, another error when the chain did not answer;
// otherwise what it learned of the governor, which the store keeps
// (Store.SaveGovernorDetails) once the DAO has its generation, so that the
// indexer need not ask again. govgate runs it on every DAO the admin API
// adds or redefines; the indexer runs its own probe before indexing a DAO
// it has no details of.
func Probe(ctx context.Context, c Chain, dao core.DAO) (core.GovernorDetails, error) {
	r := &Runner{chain: countingChain{Chain: c}, chainID: dao.ChainID}
	d := r.newState(dao)
	gi, err := r.probe(ctx, d)
	if err != nil {
		return core.GovernorDetails{}, err
	}
	return gi.details(dao), nil
}

// details is gi as the store keeps it for dao.
func (gi governorInfo) details(dao core.DAO) core.GovernorDetails {
	return core.GovernorDetails{DAO: dao.Slug, Generation: dao.Generation, Clock: gi.clock, HasClock: gi.hasClock, CountingMode: gi.countingMode,
		QuorumAbstain: gi.quorumAbstain, GraceSeconds: gi.grace, Token: gi.token.Hex()}
}

// infoOf is what a probe stored, as the indexer uses it.
func infoOf(gd core.GovernorDetails) (governorInfo, bool) {
	if (gd.Clock != core.ClockBlockNumber && gd.Clock != core.ClockTimestamp) || !common.IsHexAddress(gd.Token) {
		return governorInfo{}, false // not what a probe writes: probe again
	}
	return governorInfo{clock: gd.Clock, hasClock: gd.HasClock, countingMode: gd.CountingMode, quorumAbstain: gd.QuorumAbstain,
		grace: gd.GraceSeconds, token: common.HexToAddress(gd.Token)}, true
}

// recallDetails gives the DAOs of list that have no governor details the
// ones a probe stored for their generation: a new leader, or a process
// restarted, does not probe an unchanged DAO again. A DAO redefined since
// (another generation) or never probed is left to probeAll.
func (r *Runner) recallDetails(ctx context.Context, list []*daoState) error {
	want := false
	for _, d := range list {
		if d.info == nil && d.dao.Generation > 0 {
			want = true
			break
		}
	}
	if !want {
		return nil
	}
	stored, err := r.store.GovernorDetails(ctx, r.chainID)
	if err != nil {
		return err
	}
	n := 0
	for _, d := range list {
		gd, ok := stored[d.dao.Slug]
		if !ok || d.info != nil || gd.Generation != d.dao.Generation {
			continue
		}
		if gi, ok := infoOf(gd); ok {
			d.info = &gi
			d.detailsKept.Store(true)
			n++
		}
	}
	if n > 0 {
		r.log.Debug("governor details read from the store", "daos", n)
	}
	return nil
}

// keepDetails stores what the probes learned of the DAOs of list that the
// store has not yet: those of a DAO in the store (a generation) only. A
// failure costs the next leader a probe, not an index: it is logged.
func (r *Runner) keepDetails(ctx context.Context, list []*daoState) {
	var (
		out  []core.GovernorDetails
		kept []*daoState
	)
	for _, d := range list {
		if d.info == nil || d.detailsKept.Load() || d.dao.Generation <= 0 || d.removed.Load() {
			continue
		}
		out = append(out, d.info.details(d.dao))
		kept = append(kept, d)
	}
	if len(out) == 0 {
		return
	}
	if err := r.store.SaveGovernorDetails(ctx, out); err != nil {
		r.log.Warn("could not keep what the probes learned: the next leader probes again", "daos", len(out), "err", err)
		return
	}
	for _, d := range kept {
		d.detailsKept.Store(true)
	}
}

// checkKind refutes a governor that holds no code or does not answer as
// kind. For an OpenZeppelin governor it returns the COUNTING_MODE() answer
// that proved it one, which info decodes instead of asking again.
func checkKind(ctx context.Context, c Chain, dao core.DAO, gov common.Address) (countingMode []byte, err error) {
	refuse := func(field, format string, args ...any) error {
		return &ProbeError{DAO: dao.Slug, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	call := func(method string, args ...any) ([]byte, error) {
		data, err := probeCalls.Pack(method, args...)
		if err != nil {
			return nil, err
		}
		return c.CallContract(ctx, ethereum.CallMsg{To: &gov, Data: data}, nil)
	}
	// A contract answers its own functions: look at the code only when it
	// does not, to say why.
	noCode := func() error {
		code, err := c.CodeAt(ctx, gov, nil)
		if err != nil {
			return fmt.Errorf("governor code: %w", err)
		}
		if len(code) == 0 {
			return refuse("governor", "no contract at %s on chain %d", gov.Hex(), dao.ChainID)
		}
		return nil
	}
	switch dao.Kind {
	case core.KindOZGovernor:
		out, err := call("COUNTING_MODE")
		if err == nil && len(out) >= 64 {
			return out, nil
		}
		if err != nil && !isRevert(err) {
			return nil, fmt.Errorf("governor COUNTING_MODE: %w", err)
		}
		if err := noCode(); err != nil {
			return nil, err
		}
		return nil, refuse("kind", "the governor at %s does not answer as an OpenZeppelin governor (no COUNTING_MODE())", gov.Hex())
	case core.KindGovernorBravo, core.KindGovernorAlpha:
		out, err := call("quorumVotes")
		if err == nil && len(out) == 32 {
			props, err := call("proposals", big.NewInt(0))
			if err != nil && !isRevert(err) {
				return nil, fmt.Errorf("governor proposals(0): %w", err)
			}
			words := len(props) / 32
			switch {
			case dao.Kind == core.KindGovernorBravo && words == 10, dao.Kind == core.KindGovernorAlpha && words == 9:
				return nil, nil
			case words == 9:
				return nil, refuse("kind", "the governor at %s answers as a GovernorAlpha (its proposals() has no abstain votes): set kind governor-alpha", gov.Hex())
			case words == 10:
				return nil, refuse("kind", "the governor at %s answers as a GovernorBravo (its proposals() has abstain votes): set kind governor-bravo", gov.Hex())
			}
			return nil, refuse("kind", "the governor at %s does not answer proposals(uint256) as %s does", gov.Hex(), dao.Kind)
		}
		if err != nil && !isRevert(err) {
			return nil, fmt.Errorf("governor quorumVotes: %w", err)
		}
		if err := noCode(); err != nil {
			return nil, err
		}
		return nil, refuse("kind", "the governor at %s does not answer as %s (no quorumVotes())", gov.Hex(), dao.Kind)
	}
	return nil, refuse("kind", "unknown kind %q", dao.Kind)
}

// checkToken refutes a voting token that answers neither getVotes
// (ERC-5805, OpenZeppelin) nor getCurrentVotes (Compound, Uniswap).
func checkToken(ctx context.Context, c Chain, token common.Address) error {
	for _, m := range []string{"getVotes", "getCurrentVotes"} {
		data, err := probeCalls.Pack(m, common.Address{})
		if err != nil {
			return err
		}
		out, err := c.CallContract(ctx, ethereum.CallMsg{To: &token, Data: data}, nil)
		if err == nil && len(out) == 32 {
			return nil
		}
		if err != nil && !isRevert(err) {
			return fmt.Errorf("token %s: %w", m, err)
		}
	}
	return &ProbeError{Field: "token", Message: fmt.Sprintf("%s is not a voting token (no getVotes() nor getCurrentVotes())", token.Hex())}
}

// probeAll probes the DAOs without governor info, a few at a time, and
// marks those the chain refutes. It returns the first error that was not a
// refusal (the DAOs it concerns are probed again next time).
func (r *Runner) probeAll(ctx context.Context, list []*daoState) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, r.cfg.ProbeConcurrency)
	)
	for _, d := range list {
		if d.info != nil || d.removed.Load() {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			gi, err := r.probe(ctx, d)
			var pe *ProbeError
			switch {
			case errors.As(err, &pe):
				r.refuse(d, pe)
			case err != nil:
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("dao %s: %w", d.dao.Slug, err)
				}
				mu.Unlock()
				r.setDAOError(d, err)
			default:
				d.info = &gi
				r.mu.Lock()
				d.status.CountingMode, d.status.ClockMode = gi.countingMode, gi.clock
				r.mu.Unlock()
				r.log.Debug("governor", "dao", d.dao.Slug, "kind", d.dao.Kind, "clock", gi.clock, "counting_mode", gi.countingMode, "grace_period_s", gi.grace, "voting_token", gi.token)
			}
		}()
	}
	wg.Wait()
	r.keepDetails(ctx, list)
	return first
}

// refuse stops indexing a DAO that its chain refutes; its health fails
// with the cause until the DAO is changed or added again.
func (r *Runner) refuse(d *daoState, pe *ProbeError) {
	r.mu.Lock()
	if d.phase == phaseJoined || d.phase == phaseReady {
		r.leaving = append(r.leaving, d.dao.Slug)
	}
	d.phase, d.refusal = phaseRefused, pe
	d.status.LastError, d.status.LastErrorAt = pe.Error(), r.now()
	r.mu.Unlock()
	r.log.Error("dao refused: not indexed", "dao", d.dao.Slug, "field", pe.Field, "reason", pe.Message)
}

// Check probes the named DAOs (every DAO for nil) that have not been
// probed yet, a few at a time, and returns the first the chain refutes,
// as a *ProbeError. A DAO the chain did not answer for is probed again
// before it is indexed. What a probe reads of a governor is kept: the
// indexer does not read it again.
func (r *Runner) Check(ctx context.Context, slugs []string) error {
	want := map[string]bool{}
	for _, s := range slugs {
		want[s] = true
	}
	var list []*daoState
	for _, d := range r.snapshot() {
		if slugs == nil || want[d.dao.Slug] {
			list = append(list, d)
		}
	}
	if err := r.probeAll(withPart(ctx, "probe"), list); err != nil {
		r.log.Warn("could not check every DAO against the chain: the indexer checks them before indexing", "err", err)
	}
	for _, d := range list {
		r.mu.Lock()
		pe := d.refusal
		r.mu.Unlock()
		if pe != nil {
			return pe
		}
	}
	return nil
}
