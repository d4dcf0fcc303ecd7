// Command hostile is a test plugin for core/internal/wasmhost whose config picks how
// it behaves, from well to as badly as a plugin can: one module, built once
// by the tests, covers every case.
package main

import (
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"time"

	"github.com/govgate/govgate/sdk"
)

// Config picks the behaviour.
type Config struct {
	// Mode is one of: ok, loop, bomb, panic, crash, exit, block, sleep,
	// huge, log, error, clock.
	Mode string `json:"mode"`
	// Lines is how many lines mode "log" writes.
	Lines int `json:"lines"`
}

var hoard [][]byte

func misbehave(cfg Config, n sdk.Notification) {
	switch cfg.Mode {
	case "loop":
		for {
		}
	case "bomb":
		for {
			hoard = append(hoard, make([]byte, 4<<20))
		}
	case "panic":
		panic("boom")
	case "crash":
		go func() { panic("crash in a goroutine") }()
		for {
			runtime.Gosched()
		}
	case "exit":
		os.Exit(3)
	case "block":
		<-make(chan struct{})
	case "sleep":
		time.Sleep(time.Hour)
	case "log":
		for i := range cfg.Lines {
			sdk.Logf("line %d of %s", i, n.ID)
		}
		println("to stderr")
	}
}

func init() {
	sdk.Plugin(sdk.Meta{
		Name:         "hostile",
		Version:      "1.0.0",
		ConfigSchema: json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string"}}}`),
		Samples: []sdk.Sample{{
			Name:       "ok keeps",
			Input:      sdk.Notification{ID: "n1", Type: sdk.TypeTest, DAO: "uniswap"},
			Config:     Config{Mode: "ok"},
			ExpectKeep: true,
		}},
	})
	sdk.Filter(func(n sdk.Notification, cfg Config) bool {
		misbehave(cfg, n)
		switch cfg.Mode {
		case "clock":
			// The wall clock is the call's start: it must not move.
			a := time.Now()
			time.Sleep(time.Millisecond)
			return time.Now().Round(0).Equal(a.Round(0))
		}
		return n.DAO != "blocked"
	})
	sdk.Transform(func(n sdk.Notification, body []byte, cfg Config) (sdk.Output, error) {
		misbehave(cfg, n)
		switch cfg.Mode {
		case "huge":
			return sdk.Output{Body: make([]byte, 256<<10)}, nil
		case "error":
			return sdk.Output{}, errors.New("refusing")
		}
		out, err := json.Marshal(map[string]any{"wrapped": json.RawMessage(body), "type": n.Type})
		return sdk.Output{Body: out, ContentType: "application/vnd.test+json"}, err
	})
}

func main() {}
