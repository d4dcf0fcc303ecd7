package devchain

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// TestActionsLifecycle executes the actions proposal twice and checks that
// each of its calls took effect on chain: the treasury paid account 1, the
// MultiSend and the upgrade stored their values, the proxy moved to the
// other version each time, and the second timelock holds the scheduled
// batch.
func TestActionsLifecycle(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Options{Accounts: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for round := uint64(1); round <= 2; round++ {
		p, built, err := c.ActionsLifecycle(ctx, round)
		if err != nil {
			t.Fatal(err)
		}
		if len(built) != 4 || len(p.Targets) != 4 || len(built[1].Calls) != 2 || len(built[2].Calls) != 2 || !built[3].Calls[0].DelegateCall {
			t.Fatalf("round %d: built %+v", round, built)
		}
		out, err := c.call(ctx, "GovToken", c.Actions.Treasury, "balanceOf", c.addrs[1])
		if err != nil {
			t.Fatal(err)
		}
		if want := new(big.Int).Mul(big.NewInt(2500*int64(round)), ether); out[0].(*big.Int).Cmp(want) != 0 {
			t.Errorf("round %d: account 1 holds %s treasury tokens, want %s", round, out[0], want)
		}
		out, err = c.call(ctx, "UpgradeableBox", c.Actions.Proxy, "version")
		if err != nil {
			t.Fatal(err)
		}
		if want := 2 - round%2; out[0].(*big.Int).Uint64() != want {
			t.Errorf("round %d: proxy at version %s, want %d", round, out[0], want)
		}
		box, err := c.BoxValue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if box != round*10+1 {
			t.Errorf("round %d: box holds %d", round, box)
		}
		// The batch waits in the second timelock.
		pack := func(artifact string, v uint64) []byte {
			b, err := mustArtifact(artifact).ABI.Pack("store", new(big.Int).SetUint64(v))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		var salt [32]byte
		salt[31] = byte(round)
		out, err = c.call(ctx, "Timelock", c.Actions.Timelock, "hashOperationBatch", []common.Address{c.Box, c.Actions.Proxy},
			[]*big.Int{new(big.Int), new(big.Int)}, [][]byte{pack("Box", round*10+3), pack("UpgradeableBox", round*10+4)}, [32]byte{}, salt)
		if err != nil {
			t.Fatal(err)
		}
		out, err = c.call(ctx, "Timelock", c.Actions.Timelock, "isOperationPending", out[0])
		if err != nil {
			t.Fatal(err)
		}
		if !out[0].(bool) {
			t.Errorf("round %d: the scheduled batch is not pending in the second timelock", round)
		}
	}
}
