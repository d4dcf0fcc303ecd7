package sdk

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/govgate/govgate/sdk/abi"
)

type minConfig struct {
	Min int `json:"min"`
}

func (c *minConfig) Prepare() error {
	if c.Min < 0 {
		return errors.New("min: want 0 or more")
	}
	return nil
}

// TestFilterFunc checks what a FilterReason filter puts on the wire for one
// config: a drop carries the reason, a keep never does, a bad config is an
// error whatever the filter would say.
func TestFilterFunc(t *testing.T) {
	t.Parallel()
	f := filterFunc(func(n Notification, cfg minConfig) (bool, string) {
		return len(n.DAO) >= cfg.Min, "dao " + n.DAO + " is too short"
	})
	for _, tc := range []struct {
		name   string
		dao    string
		config string
		want   abi.Result
	}{
		{name: "kept, the reason ignored", dao: "uniswap", config: `{"min":3}`, want: abi.Result{Status: abi.StatusKeep}},
		{name: "dropped with the reason", dao: "op", config: `{"min":3}`, want: abi.Result{Status: abi.StatusDrop, Message: "dao op is too short"}},
		{name: "bad config", dao: "op", config: `{"min":-1}`, want: abi.Result{Status: abi.StatusError, Message: "prepare config: min: want 0 or more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := f(&Notification{DAO: tc.dao}, nil, []byte(tc.config))
			if got.Status != tc.want.Status || got.Message != tc.want.Message {
				t.Errorf("got %s %q, want %s %q", got.Status, got.Message, tc.want.Status, tc.want.Message)
			}
		})
	}
}

func TestDropReason(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxReasonBytes)
	for _, tc := range []struct {
		name string
		in   string
		want string
	}{
		{name: "empty", in: "", want: ""},
		{name: "short", in: `dao "ens" is not in the list`, want: `dao "ens" is not in the list`},
		{name: "exactly the bound", in: long, want: long},
		{name: "invalid UTF-8", in: "dao \xff\xfe is not listed", want: "dao \uFFFD is not listed"},
		{name: "one byte over", in: long + "y", want: long[:maxReasonBytes-len("…")] + "…"},
		// 3-byte runes from the second byte on: no cut point falls on the
		// bound minus the ellipsis, so the cut moves back to a rune start.
		{name: "cut on a rune boundary", in: "x" + strings.Repeat("€", maxReasonBytes), want: "x" + strings.Repeat("€", (maxReasonBytes-4)/3) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := dropReason(tc.in)
			if got != tc.want {
				t.Errorf("dropReason = %q (%d bytes), want %q (%d bytes)", got, len(got), tc.want, len(tc.want))
			}
			if len(got) > maxReasonBytes || !utf8.ValidString(got) {
				t.Errorf("dropReason = %d bytes, valid UTF-8 %t; want at most %d, valid", len(got), utf8.ValidString(got), maxReasonBytes)
			}
		})
	}
}
