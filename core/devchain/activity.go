package devchain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/govgate/govgate/core"
)

// RunActivity plays a script of governance on both DAOs, one scene every
// `every`, until ctx ends: full lifecycles (propose, for/against/abstain
// votes with reasons, queue, execute), a late quorum that extends the
// deadline, a vote with params, and cancellations. It returns ctx's error,
// or the first failure of a scene.
func (c *Chain) RunActivity(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for i := 0; ; i++ {
		scene := scenes[i%len(scenes)]
		if err := scene.run(ctx, c, i); err != nil {
			if err := ended(ctx); err != nil {
				return err
			}
			return fmt.Errorf("devchain activity %q: %w", scene.name, err)
		}
		c.log.Debug("devchain activity", "scene", scene.name, "round", i)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

type scene struct {
	name string
	run  func(ctx context.Context, c *Chain, round int) error
}

var scenes = []scene{
	{"oz lifecycle", func(ctx context.Context, c *Chain, round int) error {
		return c.Lifecycle(ctx, c.OZ, round, false)
	}},
	{"bravo lifecycle", func(ctx context.Context, c *Chain, round int) error {
		return c.Lifecycle(ctx, c.Bravo, round, false)
	}},
	{"oz cancel", func(ctx context.Context, c *Chain, round int) error {
		return c.proposeAndCancel(ctx, c.OZ, round)
	}},
	{"oz late quorum", func(ctx context.Context, c *Chain, round int) error {
		return c.Lifecycle(ctx, c.OZ, round, true)
	}},
	{"bravo cancel", func(ctx context.Context, c *Chain, round int) error {
		return c.proposeAndCancel(ctx, c.Bravo, round)
	}},
}

// Lifecycle runs one proposal from creation to execution: account 1
// proposes; account 2 votes against and 3 for, with reasons, then 0 for and
// 1 abstains without (on GovernorAlpha, which takes neither reasons nor
// abstentions, the same votes without reasons, and 1 does not vote).
// With late set (OpenZeppelin only), quorum is reached in the last block (or
// second) of voting, which extends the deadline (ProposalExtended), and the
// abstention carries params (VoteCastWithParams).
func (c *Chain) Lifecycle(ctx context.Context, d *Deployment, round int, late bool) error {
	c.scene.Lock()
	defer c.scene.Unlock()
	p, err := c.Propose(ctx, d, 1, fmt.Sprintf("# Dev proposal %d\n\nStore %d in the box.", round, round), uint64(round))
	if err != nil {
		return err
	}
	if err := c.OpenVoting(ctx, p); err != nil {
		return err
	}
	alpha := d.Kind == core.KindGovernorAlpha
	reason := func(r string) string {
		if alpha {
			return ""
		}
		return r
	}
	if _, err := c.Vote(ctx, p, 2, Against, reason("not convinced")); err != nil {
		return err
	}
	late = late && d.Kind == core.KindOZGovernor
	if late {
		// Quorum at the deadline: the deadline moves by the extension.
		if err := c.AdvanceTo(ctx, d, p.VoteEnd-1); err != nil {
			return err
		}
	}
	if _, err := c.Vote(ctx, p, 3, For, reason("ship it")); err != nil {
		return err
	}
	if _, err := c.Vote(ctx, p, 0, For, ""); err != nil {
		return err
	}
	switch {
	case late:
		_, err = c.VoteWithParams(ctx, p, 1, Abstain, "abstaining, with params", []byte{0xca, 0xfe})
	case !alpha:
		_, err = c.Vote(ctx, p, 1, Abstain, "")
	}
	if err != nil {
		return err
	}
	if err := c.CloseVoting(ctx, p); err != nil {
		return err
	}
	if _, err := c.Queue(ctx, p); err != nil {
		return err
	}
	if _, err := c.Execute(ctx, p); err != nil {
		return err
	}
	return nil
}

func (c *Chain) proposeAndCancel(ctx context.Context, d *Deployment, round int) error {
	c.scene.Lock()
	defer c.scene.Unlock()
	p, err := c.Propose(ctx, d, 2, fmt.Sprintf("Dev proposal %d, withdrawn", round), uint64(round))
	if err != nil {
		return err
	}
	if _, err := c.Cancel(ctx, p); err != nil {
		return err
	}
	if s, err := c.State(ctx, p); err != nil || s != 2 {
		return errors.Join(err, fmt.Errorf("state after cancel is %d, not canceled", s))
	}
	return nil
}

// ended returns why ctx ended, or nil while it runs. Past ctx's deadline it
// returns context.DeadlineExceeded even before ctx.Err does: Err turns
// non-nil only once the context's timer has fired and its goroutine has run,
// which on a loaded machine lags the deadline, while go-ethereum's
// in-process RPC client (net.Pipe) already fails any call from the deadline
// on, with a "write pipe: i/o timeout" that does not wrap the context's
// error. Judged by Err alone, such a failure of a scene cut short by ctx
// looked like a broken scene.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
