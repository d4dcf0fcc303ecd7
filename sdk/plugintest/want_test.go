package plugintest

import (
	"errors"
	"strings"
	"testing"

	"github.com/govgate/govgate/sdk/abi"
)

// TestWantReason checks how a case's Want judges a filter's drop reason.
func TestWantReason(t *testing.T) {
	t.Parallel()
	dropped := outcome{reason: `dao "ens" is not in the list`}
	for _, tc := range []struct {
		name string
		want Want
		got  outcome
		err  string // a substring of the failure; "" when the case passes
	}{
		{name: "same reason", want: Want{Reason: `dao "ens" is not in the list`}, got: dropped},
		{name: "no Reason checks none", want: Want{}, got: dropped},
		{name: "other reason", want: Want{Reason: `dao "ens" is not listed`}, got: dropped, err: `drop reason is "dao \"ens\" is not in the list", want "dao \"ens\" is not listed"`},
		{name: "no reason given", want: Want{Reason: "too light"}, got: outcome{}, err: `drop reason is "", want "too light"`},
		{name: "kept, want a drop", want: Want{Reason: "too light"}, got: outcome{keep: true}, err: "keep is true, want false"},
		{name: "dropped, want a keep", want: Want{Keep: true}, got: dropped, err: `keep is false (reason "dao \"ens\" is not in the list"), want true`},
		{name: "a keep with a reason", want: Want{Keep: true, Reason: "x"}, got: outcome{keep: true}, err: "only a drop has a reason"},
		{name: "an error is not a reason", want: Want{Reason: "x"}, got: outcome{err: errors.New("filter: boom")}, err: "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.want.check("case", tc.got)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("check: %v, want no failure", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("check: %v, want a failure with %s", err, tc.err)
			}
		})
	}
}

// TestApplyKeepsReason checks that a run records the reason of a drop, which
// the native and the wasm runs go through alike.
func TestApplyKeepsReason(t *testing.T) {
	t.Parallel()
	call := func(hook abi.Hook, in abi.Input) ([]abi.Result, error) {
		if hook != abi.HookFilter {
			t.Fatalf("%s called after a drop", hook)
		}
		return []abi.Result{{Status: abi.StatusDrop, Message: "too light"}}, nil
	}
	o := apply([]abi.Hook{abi.HookFilter, abi.HookTransform}, input{name: "vote"}, call)
	if o.keep || o.reason != "too light" || o.err != nil {
		t.Errorf("apply = keep %t, reason %q, error %v; want a drop, reason %q", o.keep, o.reason, o.err, "too light")
	}
}

// TestDiffReason checks that native and wasm runs that drop for different
// reasons disagree, and that the failure says so.
func TestDiffReason(t *testing.T) {
	t.Parallel()
	native := []abi.Result{{Status: abi.StatusDrop, Message: "weight 9 is below 10"}}
	wasm := []abi.Result{{Status: abi.StatusDrop, Message: "weight 9 is below 1"}}
	if d := diff(native, nil, native, nil); d != "" {
		t.Errorf("diff of equal answers = %q", d)
	}
	want := `drop, reason "weight 9 is below 10" and drop, reason "weight 9 is below 1"`
	if d := diff(native, nil, wasm, nil); d != want {
		t.Errorf("diff = %q, want %q", d, want)
	}
}
