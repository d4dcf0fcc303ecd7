package webui

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/govgate/govgate/core"
)

// packCall encodes a call to sig (elementary and array types only) with
// go-ethereum's ABI encoder.
func packCall(t *testing.T, sig string, args ...any) []byte {
	t.Helper()
	open := strings.IndexByte(sig, '(')
	var in abi.Arguments
	if inner := sig[open+1 : len(sig)-1]; inner != "" {
		for _, typ := range strings.Split(inner, ",") {
			ty, err := abi.NewType(typ, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			in = append(in, abi.Argument{Type: ty})
		}
	}
	data, err := in.Pack(args...)
	if err != nil {
		t.Fatalf("pack %s: %v", sig, err)
	}
	return append(crypto.Keccak256([]byte(sig))[:4], data...)
}

// TestBrowserProposalActions shows a proposal's decoded calls in Chromium:
// a treasury transfer; a TimelockController scheduleBatch of a Safe
// execTransaction that delegatecalls MultiSend, whose two calls sit three
// levels down; and a proxy upgrade with its initializer. Each shows its
// function and named arguments, nested calls indented under their carrier,
// the raw calldata only on demand. With GOVGATE_SCREENSHOTS=1 it takes
// docs/screenshots/proposal-actions.png.
func TestBrowserProposalActions(t *testing.T) {
	tb := newTab(t)
	s := newStack(t, true)
	shots := tb.screenshots()
	var (
		ens        = common.HexToAddress("0xC18360217D8F7Ab5e7c516566761Ea12Ce7F9D72")
		usdc       = common.HexToAddress("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48")
		timelock   = common.HexToAddress("0xFe89cc7aBB2C4183683ab71653C4cdc9B02D44b7")
		safe       = common.HexToAddress("0x4F2083f5fBede34C2714aFfb3105539775f7FE64")
		multiSend  = common.HexToAddress("0x40A2aCCbd92BCA938b02010E17A5b8929b49130D")
		proxy      = common.HexToAddress("0x231b0Ee14048e9dCcD1d247744d114a4EB5E8E63")
		impl       = common.HexToAddress("0x5c9Eb5D6A6C2C1B3EFc52255C0b356f116f6f66D")
		foundation = common.HexToAddress("0x2686A8919Df194aA7673244549E68D42C1685d03")
		grants     = common.HexToAddress("0x91c32893216dE3eA0a55ABb9851f581d4503d39b")
	)
	e18 := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	tokens := func(n int64, unit *big.Int) *big.Int { return new(big.Int).Mul(big.NewInt(n), unit) }
	var packed []byte
	for _, tx := range []struct {
		to   common.Address
		data []byte
	}{
		{usdc, packCall(t, "transfer(address,uint256)", grants, tokens(1_000_000, big.NewInt(1e6)))},
		{ens, packCall(t, "approve(address,uint256)", grants, tokens(50_000, e18))},
	} {
		packed = append(packed, 0)
		packed = append(packed, tx.to[:]...)
		packed = append(packed, make([]byte, 32)...)
		packed = append(packed, common.LeftPadBytes(big.NewInt(int64(len(tx.data))).Bytes(), 32)...)
		packed = append(packed, tx.data...)
	}
	execTx := packCall(t, "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)",
		multiSend, new(big.Int), packCall(t, "multiSend(bytes)", packed), uint8(1), new(big.Int), new(big.Int), new(big.Int),
		common.Address{}, common.Address{}, common.LeftPadBytes(timelock.Bytes(), 65))
	schedule := packCall(t, "scheduleBatch(address[],uint256[],bytes[],bytes32,bytes32,uint256)",
		[]common.Address{safe}, []*big.Int{new(big.Int)}, [][]byte{execTx}, [32]byte{}, [32]byte{0x01}, big.NewInt(172800))
	calls := [][]byte{
		packCall(t, "transfer(address,uint256)", foundation, tokens(2_500_000, e18)),
		schedule,
		packCall(t, "upgradeToAndCall(address,bytes)", impl, packCall(t, "transferOwnership(address)", timelock)),
	}
	p := core.Proposal{DAO: "ens", ChainID: 1, ProposalID: "4242", Proposer: "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E",
		Targets: []string{ens.Hex(), timelock.Hex(), proxy.Hex()}, Values: []string{"0", "0", "0"}, Signatures: []string{"", "", ""},
		Description: "# [EP 6.9] Treasury housekeeping\n\nPay the foundation, fund grants through the Safe, upgrade the registrar.",
		VoteStart:   21874000, VoteEnd: 21919000, Clock: core.ClockBlockNumber, State: core.ProposalActive,
		ForVotes: "0", AgainstVotes: "0", AbstainVotes: "0", CreatedBlock: 21873990, CreatedTx: "0x" + strings.Repeat("ab", 32),
		CreatedAt: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), UpdatedBlock: 21874001, UpdatedAt: time.Date(2026, 11, 20, 9, 1, 0, 0, time.UTC)}
	for _, c := range calls {
		p.Calldatas = append(p.Calldatas, hexutil.Encode(c))
	}
	if err := s.st.ApplyBatch(context.Background(), core.IndexBatch{DAO: "ens", ChainID: 1,
		Cursor: core.Cursor{Block: 21874001, Hash: "0x" + strings.Repeat("cd", 32)}, Proposals: []core.Proposal{p}}); err != nil {
		t.Fatal(err)
	}

	tb.signIn(s.srv.URL, testToken)
	tb.do("proposal", chromedp.Navigate(s.srv.URL+"/admin/ui/proposals/ens/4242"), chromedp.WaitVisible(chromedp.ID("actions")))
	tb.wantText("#actions", "3 calls", "transfer", "to", foundation.Hex(), "value", "2500000000000000000000000",
		"scheduleBatch", "targets", "delay", "172800", "execTransaction", "operation", "multiSend", "delegatecall",
		"approve", "spender", "upgradeToAndCall", "newImplementation", "transferOwnership", "newOwner", timelock.Hex())
	// The structure: the batch's calls under the Safe under the schedule,
	// three levels of indentation; the upgrade's initializer under it.
	count := func(css string) int {
		n, err := chromedp.Run(tb.ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+"`"+css+"`"+`).length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("#actions > ol > li"); n != 3 {
		t.Fatalf("%d top-level calls, want 3", n)
	}
	if n := count("#actions > ol > li:nth-child(2) .action-calls .action-calls .action-calls > li"); n != 2 {
		t.Fatalf("%d calls three levels under the schedule, want the MultiSend's 2", n)
	}
	if got := tb.text("#actions > ol > li:nth-child(2) .action-calls .action-calls > li .action-head"); !strings.Contains(got, "multiSend") || !strings.Contains(got, "delegatecall") {
		t.Fatalf("the Safe's call: %q", got)
	}
	indent, err := chromedp.Run(tb.ctx, chromedp.Evaluate[float64](`(() => {
		const outer = document.querySelector("#actions > ol > li:nth-child(2) > .action-head").getBoundingClientRect().left;
		const inner = document.querySelector("#actions > ol > li:nth-child(2) .action-calls .action-calls .action-calls .action-head").getBoundingClientRect().left;
		return inner - outer;
	})()`))
	if err != nil || indent < 40 {
		t.Fatalf("the innermost calls sit %.0f px right of their outermost carrier (%v), want them indented", indent, err)
	}
	// Raw calldata only on demand.
	if n := count("details.action-raw[open]"); n != 0 {
		t.Fatalf("%d raw calldata blocks open before asked", n)
	}
	visible, err := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`document.querySelector("#actions > ol > li:first-child > details.action-raw pre").checkVisibility()`))
	if err != nil || visible {
		t.Fatalf("raw calldata visible before asked (%v)", err)
	}
	if shots {
		tb.shot("proposal-actions", "#actions")
	}
	tb.do("raw", chromedp.Click(chromedp.CSS("#actions > ol > li:first-child > details.action-raw summary")),
		chromedp.WaitVisible(chromedp.CSS("#actions > ol > li:first-child > details.action-raw pre")))
	tb.wantText("#actions > ol > li:first-child > details.action-raw pre", p.Calldatas[0])
}
