package abi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestInputRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
	}{
		{"full", Input{
			Notification: Notification{ID: "n1", Type: "vote.cast", DAO: "uniswap",
				OccurredAt: time.Date(2025, 3, 1, 12, 0, 0, 123, time.UTC), Data: json.RawMessage(`{"weight":"1"}`)},
			Body: []byte(`{"a":1}`), ContentType: "application/json",
			Configs: []json.RawMessage{json.RawMessage(`{"daos":["x"]}`), nil, json.RawMessage(`null`)},
		}},
		{"empty", Input{Configs: []json.RawMessage{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendInput(nil, &tc.in)
			got, err := DecodeInput(b)
			if err != nil {
				t.Fatal(err)
			}
			// Empty and nil slices are the same on the wire.
			same := func(a, b Input) bool {
				na, nb := a.Notification, b.Notification
				if na.ID != nb.ID || na.Type != nb.Type || na.DAO != nb.DAO || !na.OccurredAt.Equal(nb.OccurredAt) ||
					!bytes.Equal(na.Data, nb.Data) || !bytes.Equal(a.Body, b.Body) || a.ContentType != b.ContentType || len(a.Configs) != len(b.Configs) {
					return false
				}
				for i := range a.Configs {
					if !bytes.Equal(a.Configs[i], b.Configs[i]) {
						return false
					}
				}
				return true
			}
			if !same(got, tc.in) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tc.in)
			}
			for cut := range len(b) {
				if _, err := DecodeInput(b[:cut]); err == nil {
					t.Fatalf("input cut at %d of %d decoded", cut, len(b))
				}
			}
			if _, err := DecodeInput(append(b, 0)); err == nil {
				t.Error("input with a trailing byte decoded")
			}
		})
	}
}

func TestResults(t *testing.T) {
	rs := []Result{
		{Status: StatusKeep},
		{Status: StatusDrop, Message: "not listed"},
		{Status: StatusError, Message: "boom"},
		{Status: StatusBody, ContentType: "text/plain", Body: []byte("hi")},
		{Status: StatusUnchanged},
	}
	var b []byte
	for _, r := range rs {
		b = AppendResult(b, r)
	}
	got, err := DecodeResults(b, len(rs))
	if err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		if got[i].Status != rs[i].Status || got[i].Message != rs[i].Message || got[i].ContentType != rs[i].ContentType || string(got[i].Body) != string(rs[i].Body) {
			t.Errorf("result %d = %+v, want %+v", i, got[i], rs[i])
		}
	}
	for _, tc := range []struct {
		name string
		out  []byte
		n    int
		want string
	}{
		{"too few", AppendResult(nil, Result{Status: StatusKeep}), 2, "1 results for 2 configs"},
		{"too many", b, 2, "more than 2 results"},
		{"unknown status", []byte{9, 0, 0, 0, 0}, 1, "unknown status 9"},
		{"truncated", b[:len(b)-1], len(rs), "truncated"},
		{"keep with a payload", []byte{1, 1, 0, 0, 0, 'x'}, 1, "with a payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeResults(tc.out, tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeResults = %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("one error stands for all", func(t *testing.T) {
		got, err := DecodeResults(AppendResult(nil, Result{Status: StatusError, Message: "bad input"}), 3)
		if err != nil || len(got) != 3 || got[2].Message != "bad input" {
			t.Errorf("DecodeResults = %+v, %v", got, err)
		}
	})
	if !errors.Is(ErrTruncated, ErrTruncated) {
		t.Fatal()
	}
}

func TestPack(t *testing.T) {
	p, n := Unpack(Pack(0xdeadbeef, 42))
	if p != 0xdeadbeef || n != 42 {
		t.Errorf("Unpack(Pack) = %x, %d", p, n)
	}
}

func TestMetaValidate(t *testing.T) {
	good := Meta{ABI: 1, Name: "dao-filter", Version: "1.0.0", Hooks: []Hook{HookFilter}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Meta)
		want string
	}{
		{"abi", func(m *Meta) { m.ABI = 2 }, "abi is 2"},
		{"name", func(m *Meta) { m.Name = "Dao Filter" }, "name"},
		{"version", func(m *Meta) { m.Version = "" }, "version"},
		{"no hooks", func(m *Meta) { m.Hooks = nil }, "hooks"},
		{"unknown hook", func(m *Meta) { m.Hooks = []Hook{"route"} }, "unknown hook"},
		{"schema", func(m *Meta) { m.ConfigSchema = json.RawMessage(`{`) }, "configSchema"},
		{"sample names", func(m *Meta) { m.Samples = []Sample{{Name: "a"}, {Name: "a"}} }, "repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := good
			tc.edit(&m)
			if err := m.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSample(t *testing.T) {
	s := Sample{Name: "s", Input: Notification{ID: "n", Type: "test"}, ExpectKeep: true, ExpectBody: `{"a": 1, "b": [1, 2]}`}
	if err := s.Check(true, []byte(`{"b":[1,2],"a":1}`), "application/json"); err != nil {
		t.Errorf("same JSON, other order: %v", err)
	}
	if err := s.Check(true, []byte(`{"a":2,"b":[1,2]}`), ""); err == nil {
		t.Error("different body passed")
	}
	if err := s.Check(false, nil, ""); err == nil {
		t.Error("dropped passed")
	}
	body, _ := s.InputBody()
	var n Notification
	if err := json.Unmarshal(body, &n); err != nil || !reflect.DeepEqual(n.ID, "n") {
		t.Errorf("InputBody = %s", body)
	}
	if SameBody([]byte(`{"n":12345678901234567890}`), []byte(`{"n":12345678901234567891}`)) {
		t.Error("big numbers compared as floats")
	}
}

func TestValidName(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"dao-filter", true},
		{"a", true},
		{"0", true},
		{"a.b_c-d9", true},
		{long, true},
		{long + "a", false},
		{"", false},
		{"-a", false},
		{"a-", false},
		{".a", false},
		{"a_", false},
		{"Dao", false},
		{"dao filter", false},
		{"dao/filter", false},
		{"é", false},
	} {
		if got := ValidName(tc.name); got != tc.want {
			t.Errorf("ValidName(%q) = %t, want %t", tc.name, got, tc.want)
		}
	}
}
