package devchain

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/govgate/govgate/core"
)

// ActionTargets are the contracts that the actions proposal of dev-oz
// calls, so that its decoded actions show every kind of call a real
// proposal makes: a treasury transfer, a batch, a timelock's schedule and
// a proxy upgrade. All come from the npm packages as published.
type ActionTargets struct {
	// Treasury is a GovToken whose supply sits in dev-oz's timelock.
	Treasury common.Address
	// MultiSend is Safe's MultiSendCallOnly (@safe-global/safe-contracts).
	MultiSend common.Address
	// Timelock is a second TimelockController (a treasury's, say) on which
	// dev-oz's timelock holds the proposer role.
	Timelock common.Address
	// Proxy is an ERC1967Proxy (BoxProxy) over UpgradeableBox, a UUPS
	// implementation whose upgrader is dev-oz's timelock; ImplV1 and
	// ImplV2 are two deployments of it, versions 1 and 2.
	Proxy, ImplV1, ImplV2 common.Address
}

// actionsTimelockDelay is the minimum delay of ActionTargets.Timelock.
const actionsTimelockDelay = 60 // seconds

// deployActionTargets deploys ActionTargets; c.mu is held and dev-oz is
// deployed.
func (c *Chain) deployActionTargets(ctx context.Context) error {
	t := &ActionTargets{}
	var err error
	if t.Treasury, _, err = c.deployLocked(ctx, "GovToken", c.OZ.Timelock, tokens(tokenSupply)); err != nil {
		return err
	}
	if t.MultiSend, _, err = c.deployLocked(ctx, "MultiSendCallOnly"); err != nil {
		return err
	}
	if t.Timelock, _, err = c.deployLocked(ctx, "Timelock", big.NewInt(actionsTimelockDelay),
		[]common.Address{c.OZ.Timelock}, []common.Address{{}}, common.Address{}); err != nil {
		return err
	}
	if t.ImplV1, _, err = c.deployLocked(ctx, "UpgradeableBox", c.OZ.Timelock, big.NewInt(1)); err != nil {
		return err
	}
	if t.ImplV2, _, err = c.deployLocked(ctx, "UpgradeableBox", c.OZ.Timelock, big.NewInt(2)); err != nil {
		return err
	}
	// OpenZeppelin 5.x's proxy wants an initializer: the proxy starts by
	// storing 0.
	init, err := mustArtifact("UpgradeableBox").ABI.Pack("store", new(big.Int))
	if err != nil {
		return err
	}
	if t.Proxy, _, err = c.deployLocked(ctx, "BoxProxy", t.ImplV1, init); err != nil {
		return err
	}
	c.Actions = t
	return nil
}

// BuiltCall is a call as the dev chain built it: what its decoding must
// show. Args are in the JSON conventions of an action's args (decimal
// strings, EIP-55 addresses, 0x-hex bytes, arrays as arrays).
type BuiltCall struct {
	Target       common.Address
	Value        *big.Int
	Signature    string // canonical, e.g. transfer(address,uint256)
	Args         []any
	DelegateCall bool
	Calls        []BuiltCall
}

// call builds a call of artifact's method with args, and its BuiltCall
// with shown, the arguments as an action shows them.
func call(artifact string, to common.Address, method string, shown []any, args ...any) ([]byte, BuiltCall) {
	m := mustArtifact(artifact).ABI.Methods[method]
	data, err := mustArtifact(artifact).ABI.Pack(method, args...)
	if err != nil {
		panic(fmt.Sprintf("%s.%s: %v", artifact, method, err)) // a bug in the scene
	}
	return data, BuiltCall{Target: to, Value: new(big.Int), Signature: m.Sig, Args: shown}
}

func dec(n *big.Int) string { return n.String() }

// ActionsProposal returns the calls of dev-oz's actions proposal for a
// round, with what each must decode to: a transfer of treasury tokens to
// account 1; a MultiSend batch storing values in the Box and in the
// proxied UpgradeableBox; a scheduleBatch on the second timelock of two
// more stores; and an upgradeToAndCall of the proxy to the other version,
// storing a value as it upgrades.
func (c *Chain) ActionsProposal(round uint64) (targets []common.Address, values []*big.Int, calldatas [][]byte, built []BuiltCall) {
	t := c.Actions
	v := func(i uint64) *big.Int { return new(big.Int).SetUint64(round*10 + i) }
	add := func(data []byte, b BuiltCall) {
		targets, values, calldatas, built = append(targets, b.Target), append(values, new(big.Int)), append(calldatas, data), append(built, b)
	}

	amount := new(big.Int).Mul(big.NewInt(2500), ether)
	add(call("GovToken", t.Treasury, "transfer", []any{c.addrs[1].Hex(), dec(amount)}, c.addrs[1], amount))

	store1, inner1 := call("Box", c.Box, "store", []any{dec(v(1))}, v(1))
	store2, inner2 := call("UpgradeableBox", t.Proxy, "store", []any{dec(v(2))}, v(2))
	var packed []byte
	for _, tx := range []struct {
		to   common.Address
		data []byte
	}{{c.Box, store1}, {t.Proxy, store2}} {
		packed = append(packed, 0) // operation: call
		packed = append(packed, tx.to[:]...)
		packed = append(packed, make([]byte, 32)...) // value
		packed = append(packed, common.LeftPadBytes(big.NewInt(int64(len(tx.data))).Bytes(), 32)...)
		packed = append(packed, tx.data...)
	}
	data, b := call("MultiSendCallOnly", t.MultiSend, "multiSend", []any{hexutil.Encode(packed)}, packed)
	b.Calls = []BuiltCall{inner1, inner2}
	add(data, b)

	store3, inner3 := call("Box", c.Box, "store", []any{dec(v(3))}, v(3))
	store4, inner4 := call("UpgradeableBox", t.Proxy, "store", []any{dec(v(4))}, v(4))
	var salt [32]byte
	binary.BigEndian.PutUint64(salt[24:], round)
	zero := new(big.Int)
	delay := big.NewInt(actionsTimelockDelay)
	data, b = call("Timelock", t.Timelock, "scheduleBatch",
		[]any{[]any{c.Box.Hex(), t.Proxy.Hex()}, []any{"0", "0"}, []any{hexutil.Encode(store3), hexutil.Encode(store4)},
			hexutil.Encode(make([]byte, 32)), hexutil.Encode(salt[:]), dec(delay)},
		[]common.Address{c.Box, t.Proxy}, []*big.Int{zero, zero}, [][]byte{store3, store4}, [32]byte{}, salt, delay)
	b.Calls = []BuiltCall{inner3, inner4}
	add(data, b)

	impl := t.ImplV2
	if round%2 == 1 {
		impl = t.ImplV1
	}
	store5, inner5 := call("UpgradeableBox", impl, "store", []any{dec(v(5))}, v(5))
	inner5.DelegateCall = true
	data, b = call("UpgradeableBox", t.Proxy, "upgradeToAndCall", []any{impl.Hex(), hexutil.Encode(store5)}, impl, store5)
	b.Calls = []BuiltCall{inner5}
	add(data, b)
	return targets, values, calldatas, built
}

// ActionsLifecycle runs dev-oz's actions proposal for a round from
// creation to execution (Lifecycle's votes, without the late quorum) and
// checks that its calls took effect; it returns the proposal and its
// calls as built.
func (c *Chain) ActionsLifecycle(ctx context.Context, round uint64) (*Proposal, []BuiltCall, error) {
	c.scene.Lock()
	defer c.scene.Unlock()
	d := c.OZ
	targets, values, calldatas, built := c.ActionsProposal(round)
	p := &Proposal{
		DAO: d, Proposer: 1, Targets: targets, Values: values, Calldatas: calldatas,
		Description: fmt.Sprintf("# Treasury housekeeping %d\n\nPay a contributor, batch two stores through MultiSend, schedule two more on the treasury timelock, and upgrade the box proxy.", round),
	}
	r, err := c.transact(ctx, 1, d.contract(), d.Governor, "propose", targets, values, calldatas, p.Description)
	if err != nil {
		return nil, nil, err
	}
	if err := p.created(r); err != nil {
		return nil, nil, err
	}
	if err := c.OpenVoting(ctx, p); err != nil {
		return nil, nil, err
	}
	for _, v := range []struct {
		voter   int
		support uint8
		reason  string
	}{{0, For, "routine upkeep"}, {2, For, ""}, {3, Against, "the upgrade needs an audit"}} {
		if _, err := c.Vote(ctx, p, v.voter, v.support, v.reason); err != nil {
			return nil, nil, err
		}
	}
	if err := c.CloseVoting(ctx, p); err != nil {
		return nil, nil, err
	}
	if _, err := c.Queue(ctx, p); err != nil {
		return nil, nil, err
	}
	if _, err := c.Execute(ctx, p); err != nil {
		return nil, nil, err
	}
	out, err := c.call(ctx, "UpgradeableBox", c.Actions.Proxy, "value")
	if err != nil {
		return nil, nil, err
	}
	if got := out[0].(*big.Int).Uint64(); got != round*10+5 {
		return nil, nil, fmt.Errorf("actions proposal: the proxy holds %d after execution, not %d", got, round*10+5)
	}
	return p, built, nil
}

// actionsScene is a round of ActionsLifecycle.
func actionsScene(ctx context.Context, c *Chain, round int) error {
	_, _, err := c.ActionsLifecycle(ctx, uint64(round))
	return err
}

// WriteABIs writes the ABIs of the contracts that the dev proposals call
// and the curated set does not cover (the Box, the UpgradeableBox proxy
// and its implementations) to dir as <address>.json, the layout of
// govgate's decode.abi_dir, so that their calls decode with names.
func (c *Chain) WriteABIs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[common.Address]string{c.Box: "Box"}
	if t := c.Actions; t != nil {
		files[t.Proxy], files[t.ImplV1], files[t.ImplV2] = "UpgradeableBox", "UpgradeableBox", "UpgradeableBox"
	}
	for addr, name := range files {
		raw, err := artifactFS.ReadFile("contracts/artifacts/" + name + ".json")
		if err != nil {
			return err
		}
		var f struct {
			ABI json.RawMessage `json:"abi"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, strings.ToLower(addr.Hex())+".json"), f.ABI, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CheckActions reports how decoded actions differ from the calls as
// built: each must be decoded, with the same target, value, signature,
// operation and arguments (compared as JSON values), and the same nested
// calls, in order. It returns nil when they agree.
func CheckActions(got []core.Action, want []BuiltCall) error {
	return checkActions("action", got, want)
}

func checkActions(path string, got []core.Action, want []BuiltCall) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d calls, want %d", path, len(got), len(want))
	}
	for i, w := range want {
		g, at := got[i], fmt.Sprintf("%s[%d]", path, i)
		switch {
		case !g.Decoded:
			return fmt.Errorf("%s: not decoded (%s %s)", at, g.Selector, g.Calldata)
		case g.Target != w.Target.Hex() || g.Value != w.Value.String() || g.Signature != w.Signature || g.DelegateCall != w.DelegateCall:
			return fmt.Errorf("%s: %s %s wei %s delegate %v, want %s %s wei %s delegate %v", at,
				g.Target, g.Value, g.Signature, g.DelegateCall, w.Target.Hex(), w.Value, w.Signature, w.DelegateCall)
		case len(g.Args) != len(w.Args):
			return fmt.Errorf("%s: %d args, want %d", at, len(g.Args), len(w.Args))
		}
		for j, a := range g.Args {
			var gv any
			if err := json.Unmarshal(a.Value, &gv); err != nil {
				return fmt.Errorf("%s arg %d: %w", at, j, err)
			}
			wj, _ := json.Marshal(w.Args[j])
			var wv any
			_ = json.Unmarshal(wj, &wv)
			if !reflect.DeepEqual(gv, wv) {
				return fmt.Errorf("%s arg %d (%s): %s, want %s", at, j, a.Name, a.Value, wj)
			}
		}
		if err := checkActions(at+".calls", g.Calls, w.Calls); err != nil {
			return err
		}
	}
	return nil
}
