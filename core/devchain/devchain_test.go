package devchain

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
)

func TestStartServesJSONRPC(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Options{Accounts: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ec, err := ethclient.DialContext(ctx, c.RPCURL())
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	id, err := ec.ChainID(ctx)
	if err != nil || id.Uint64() != ChainID {
		t.Fatalf("chain id over HTTP: %v, %v", id, err)
	}
	for _, d := range c.DAOs() {
		if err := d.Kind; !err.Valid() {
			t.Fatalf("dao %s: kind %q", d.Slug, d.Kind)
		}
		if d.StartBlock == 0 || d.ChainID != ChainID {
			t.Fatalf("dao %+v", d)
		}
	}
	if err := c.ChainConfig().WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLifecycles(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Options{Accounts: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	tests := []struct {
		name string
		dep  *Deployment
		late bool
	}{
		{"oz", c.OZ, false},
		{"oz late quorum", c.OZ, true},
		{"bravo", c.Bravo, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Lifecycle(ctx, tt.dep, 100+i, tt.late); err != nil {
				t.Fatal(err)
			}
			v, err := c.BoxValue(ctx)
			if err != nil || v != uint64(100+i) {
				t.Fatalf("box value %d, %v; want %d", v, err, 100+i)
			}
		})
	}
	for _, d := range []*Deployment{c.OZ, c.Bravo} {
		if err := c.proposeAndCancel(ctx, d, 7); err != nil {
			t.Fatalf("%s cancel: %v", d.Slug, err)
		}
	}
	// Events of every kind were emitted by the OpenZeppelin governor.
	logs, err := c.Client().FilterLogs(ctx, ethereum.FilterQuery{Addresses: []common.Address{c.OZ.Governor}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	gov := mustArtifact("OZGovernor").ABI
	for _, l := range logs {
		if ev, err := gov.EventByID(l.Topics[0]); err == nil {
			seen[ev.Name]++
		}
	}
	for _, name := range []string{"ProposalCreated", "VoteCast", "VoteCastWithParams", "ProposalExtended", "ProposalQueued", "ProposalExecuted", "ProposalCanceled"} {
		if seen[name] == 0 {
			t.Errorf("no %s event in %v", name, seen)
		}
	}
}

func TestCastVotesBySig(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Options{Accounts: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.Propose(ctx, c.OZ, 1, "many voters", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.OpenVoting(ctx, p); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rs, err := c.CastVotesBySig(ctx, p, 0, 450, func(i int) uint8 { return uint8(i % 3) })
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		n += len(r.Logs)
		t.Logf("batch tx gas %d, %d logs", r.GasUsed, len(r.Logs))
	}
	if n != 450 {
		t.Fatalf("%d logs, want 450", n)
	}
	t.Logf("450 signed ballots in %v", time.Since(start))
}

func TestRunActivity(t *testing.T) {
	c, err := Start(context.Background(), Options{Accounts: 4, BlockTime: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.RunActivity(ctx, 20*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("activity ended with %v", err)
	}
	seen := map[string]int{}
	for _, d := range []*Deployment{c.OZ, c.Bravo} {
		logs, err := c.Client().FilterLogs(context.Background(), ethereum.FilterQuery{Addresses: []common.Address{d.Governor}})
		if err != nil {
			t.Fatal(err)
		}
		gov := mustArtifact(d.contract()).ABI
		for _, l := range logs {
			if ev, err := gov.EventByID(l.Topics[0]); err == nil {
				seen[d.Slug+" "+ev.Name]++
			}
		}
	}
	for _, k := range []string{"dev-oz ProposalCreated", "dev-oz VoteCast", "dev-oz ProposalQueued", "dev-oz ProposalExecuted",
		"dev-oz ProposalCanceled", "dev-oz ProposalExtended", "dev-oz VoteCastWithParams",
		"dev-bravo ProposalCreated", "dev-bravo VoteCast", "dev-bravo ProposalExecuted", "dev-bravo ProposalCanceled"} {
		if seen[k] == 0 {
			t.Errorf("no %s in %v", k, seen)
		}
	}
}

// lateContext is a context caught between its deadline and the firing of its
// timer: the deadline has passed, but Err is still nil and Done still open.
type lateContext struct{ context.Context }

func (lateContext) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestRunActivityPastDeadline holds RunActivity in the window in which
// TestRunActivity failed under load ("write pipe: i/o timeout"): the
// in-process RPC client fails every call once the deadline has passed,
// before the context says so.
func TestRunActivityPastDeadline(t *testing.T) {
	c, err := Start(context.Background(), Options{Accounts: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.RunActivity(lateContext{context.Background()}, time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("activity past its deadline ended with %v", err)
	}
}
