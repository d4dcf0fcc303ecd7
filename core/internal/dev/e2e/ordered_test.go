package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"
)

// registerWith registers a webhook with the given body (url and settings)
// and returns its secret.
func (p *proc) registerWith(t *testing.T, body map[string]any) string {
	t.Helper()
	resp, b := do(t, "POST", "http://"+p.webhooks+"/webhooks", "", body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register %v: %d %s", body, resp.StatusCode, b)
	}
	var out struct{ Secret string }
	json.Unmarshal(b, &out)
	return out.Secret
}

// inOrder checks that ids arrived as want: each first arrival in want's
// order, and a repeat (at-least-once after a kill) only of the latest one.
func inOrder(t *testing.T, got, want []string) {
	t.Helper()
	var firsts []string
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			if id != firsts[len(firsts)-1] {
				t.Fatalf("%s arrived again after %s", id, firsts[len(firsts)-1])
			}
			continue
		}
		seen[id] = true
		firsts = append(firsts, id)
	}
	if !slices.Equal(firsts, want) {
		t.Fatalf("the ordered endpoint got %d notifications in the order %v, want %v", len(firsts), firsts, want)
	}
}

// TestOrderedDeliverySurvivesKillsAndProcesses runs the real binary: an
// ordered webhook receives every notification in acceptance order, none
// lost, while its receiver fails for a while and a govgate process is
// killed with SIGKILL mid-line; on PostgreSQL two processes share the line
// (and one of them dies), on SQLite the one process is restarted.
func TestOrderedDeliverySurvivesKillsAndProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("long test")
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			rcv := newReceiver(t)
			var db string
			if backend == "postgres" {
				db = storetest.Postgres.NewDatabase(t)
			} else {
				db, _ = sqliteURL(t)
			}
			procs := []*proc{startGovgate(t, db, rcv.caFile, deliveryConfig)}
			if backend == "postgres" {
				procs = append(procs, startGovgate(t, db, rcv.caFile, deliveryConfig))
			}
			p := procs[0]
			rcv.setSecret("/ord", p.registerWith(t, map[string]any{"url": rcv.url("/ord"), "ordered": true}))
			rcv.setSecret("/free", p.register(t, rcv.url("/free")))
			// The receiver fails the 11th notification's first attempts, and
			// is slow enough that the kill lands mid-line.
			var mu sync.Mutex
			fails := 0
			rcv.status = func(path string) int {
				if path != "/ord" {
					return 200
				}
				time.Sleep(10 * time.Millisecond)
				mu.Lock()
				defer mu.Unlock()
				rcv.mu.Lock()
				n := len(rcv.order["/ord"])
				rcv.mu.Unlock()
				if n == 10 && fails < 4 {
					fails++
					return 500
				}
				return 200
			}
			const n = 60
			var sent []string
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("ntf-ord-%03d", i)
				sent = append(sent, id)
				procs[i%len(procs)].notify(t, id, "uniswap", map[string]any{"i": i})
			}
			ordered := func() int {
				rcv.mu.Lock()
				defer rcv.mu.Unlock()
				return len(rcv.order["/ord"])
			}
			waitFor(t, "the line to pass its failures", 60*time.Second, func() bool { return ordered() >= 20 })
			procs[0].kill()
			if backend == "sqlite" {
				procs[0].start()
			}
			waitFor(t, "every ordered delivery", 120*time.Second, func() bool {
				rcv.mu.Lock()
				defer rcv.mu.Unlock()
				seen := map[string]bool{}
				for _, id := range rcv.order["/ord"] {
					seen[id] = true
				}
				return len(seen) == n
			})
			rcv.mu.Lock()
			got := slices.Clone(rcv.order["/ord"])
			rcv.mu.Unlock()
			inOrder(t, got, sent)
			mu.Lock()
			if fails < 4 {
				t.Errorf("the receiver failed %d times, want 4: the line was never held", fails)
			}
			mu.Unlock()
			waitFor(t, "every unordered delivery", 60*time.Second, func() bool { return rcv.distinct() >= 2*n })
		})
	}
}
