package schemas

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/store"
)

// dir is docs/schemas, where the schema and its examples are published.
var dir = filepath.Join("..", "..", "..", "..", "docs", "schemas")

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile(filepath.Join(dir, "notification.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func TestExamplesMatchSchema(t *testing.T) {
	sch := compile(t)
	files, _ := filepath.Glob(filepath.Join(dir, "examples", "*.json"))
	if len(files) < 7 {
		t.Fatalf("found %d examples, want one per type", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(v); err != nil {
				t.Fatal(err)
			}
			var n struct{ Type string }
			json.Unmarshal(raw, &n)
			if n.Type+".json" != filepath.Base(f) {
				t.Fatalf("example %s holds type %q", f, n.Type)
			}
		})
	}
}

func TestSchemaRejectsBadNotifications(t *testing.T) {
	sch := compile(t)
	for _, tc := range []struct{ name, doc string }{
		{"missing id", `{"type":"test","dao":"x","occurredAt":"2026-01-01T00:00:00Z","data":{}}`},
		{"vote without weight", `{"id":"a","type":"vote.cast","dao":"x","occurredAt":"2026-01-01T00:00:00Z","data":{"chainId":1,"governor":"0x408ED6354d4973f66138C91495F2f2FCbd8724C3","proposalId":"1","blockNumber":1,"blockHash":"0x5e1c2d0f6a8b9c7d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d","txHash":"0x5e1c2d0f6a8b9c7d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d","logIndex":0,"voter":"0x8E4ED221fa034245F14205f781E0b13C5bd6a42E","support":1,"supportLabel":"for","reason":""}}`},
		{"weight as a number", `{"id":"a","type":"proposal.queued","dao":"x","occurredAt":"2026-01-01T00:00:00Z","data":{"chainId":1,"governor":"0x408ED6354d4973f66138C91495F2f2FCbd8724C3","proposalId":"1","blockNumber":1,"blockHash":"0x5e1c2d0f6a8b9c7d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d","txHash":"0x5e1c2d0f6a8b9c7d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d","logIndex":0,"eta":1764237600}}`},
		{"bad time", `{"id":"a","type":"test","dao":"x","occurredAt":"yesterday","data":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := jsonschema.UnmarshalJSON(strings.NewReader(tc.doc))
			if err := sch.Validate(v); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// The store builds delivery bodies; they must satisfy the schema.
func TestDeliveryBodyMatchesSchema(t *testing.T) {
	sch := compile(t)
	body, err := store.NotificationBody(core.Notification{ID: "ntf_1", Type: "test", DAO: "uniswap", Data: json.RawMessage(`{"a": [1, 2]}`)})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(body)))
	if err := sch.Validate(v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
}
