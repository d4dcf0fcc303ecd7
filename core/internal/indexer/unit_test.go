package indexer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/govgate/govgate/core"
)

type codeErr struct {
	code int
	msg  string
}

func (e codeErr) Error() string  { return e.msg }
func (e codeErr) ErrorCode() int { return e.code }

func TestIsRangeError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"geth-style -32005", fmt.Errorf("eth_getLogs via https://x: %w", codeErr{-32005, "limit exceeded"}), true},
		{"infura", errors.New("query returned more than 10000 results"), true},
		{"alchemy", errors.New("Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range"), true},
		{"quicknode", errors.New("eth_getLogs is limited to a 10,000 range"), true},
		{"range too large", errors.New("block range too large"), true},
		{"connection refused", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
		{"other json-rpc error", codeErr{-32000, "header not found"}, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isRangeError(tt.err); got != tt.want {
				t.Fatalf("isRangeError(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestNotificationID(t *testing.T) {
	tx := common.HexToHash("0x01")
	a := NotificationID(1, tx, 3)
	if a != NotificationID(1, tx, 3) || len(a) != 36 || a[:4] != "evt_" {
		t.Fatalf("id %q not deterministic or malformed", a)
	}
	for _, other := range []string{NotificationID(2, tx, 3), NotificationID(1, common.HexToHash("0x02"), 3), NotificationID(1, tx, 4)} {
		if other == a {
			t.Fatalf("ids collide: %s", a)
		}
	}
	// Pinned (computed independently): receivers may store these ids, so
	// they must never change.
	if want := "evt_3f5db5bb533d1fa6e3e6028a669d8651"; a != want {
		t.Fatalf("id %s, want %s", a, want)
	}
}

func TestClassify(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &Runner{cfg: Config{}.WithDefaults(), started: t0.Add(-time.Hour)}
	tests := []struct {
		name string
		s    DAOStatus
		want string
	}{
		{"never polled, just started", DAOStatus{}, core.IndexingStalled},
		{"fresh", DAOStatus{LastCheckedAt: t0, LastIndexedAt: t0, CaughtUp: true}, core.IndexingFresh},
		{"catching up", DAOStatus{LastCheckedAt: t0, LastIndexedAt: t0, LagBlocks: 5000}, core.IndexingSyncing},
		{"fell behind", DAOStatus{LastCheckedAt: t0, LastIndexedAt: t0, LagBlocks: 5000, CaughtUp: true}, core.IndexingLagging},
		{"behind in time", DAOStatus{LastCheckedAt: t0, LastIndexedAt: t0, LagBlocks: 1, LagSeconds: 3600, CaughtUp: true}, core.IndexingLagging},
		{"no poll for long", DAOStatus{LastCheckedAt: t0.Add(-10 * time.Minute), CaughtUp: true}, core.IndexingStalled},
		{"no progress while behind", DAOStatus{LastCheckedAt: t0, LastIndexedAt: t0.Add(-10 * time.Minute), LagBlocks: 3, CaughtUp: true}, core.IndexingStalled},
		{"idle chain, caught up", DAOStatus{LastCheckedAt: t0, LastIndexedAt: t0.Add(-time.Hour), CaughtUp: true}, core.IndexingFresh},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.classify(tt.s, t0); got != tt.want {
				t.Fatalf("classify = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"defaults", Config{}, ""},
		{"max below initial", Config{InitialRange: 100, MaxRange: 10}, "max_range"},
		{"keep too few", Config{KeepBlocks: 1}, "keep_blocks"},
		{"stalled before a poll", Config{PollInterval: time.Minute, IndexingThresholds: core.IndexingThresholds{StalledAfter: time.Second}}, "stalled_after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.WithDefaults().Validate()
			if (err == nil) != (tt.field == "") || (err != nil && !strings.Contains(err.Error(), tt.field)) {
				t.Fatalf("Validate() = %v, want field %q", err, tt.field)
			}
		})
	}
}

// TestGovernorDetailsRoundTrip sets every field of governorInfo and keeps
// it as the store does: a leader that reads it back has the governor as
// the probe read it. A field added to governorInfo and not to the store's
// GovernorDetails fails here.
func TestGovernorDetailsRoundTrip(t *testing.T) {
	var gi governorInfo
	v := reflect.ValueOf(&gi).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem()
		switch f.Kind() {
		case reflect.String:
			f.SetString("mode=blocknumber&from=default") // a valid clock is set below
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Uint64:
			f.SetUint(1_209_600)
		case reflect.Array:
			reflect.Copy(f, reflect.ValueOf(common.HexToAddress("0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984")))
		default:
			t.Fatalf("governorInfo.%s: a %s the test does not set", v.Type().Field(i).Name, f.Kind())
		}
	}
	gi.clock = core.ClockTimestamp
	dao := core.DAO{Slug: "uni", Generation: 7}
	gd := gi.details(dao)
	if gd.DAO != "uni" || gd.Generation != 7 {
		t.Fatalf("details of %+v: %+v", dao, gd)
	}
	back, ok := infoOf(gd)
	if !ok || back != gi {
		t.Fatalf("read back %+v (%v), kept %+v", back, ok, gi)
	}
	gd.Clock = "seconds"
	if _, ok := infoOf(gd); ok {
		t.Fatal("details with a clock no probe writes were taken")
	}
}
