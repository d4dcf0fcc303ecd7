package sdk_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/govgate/govgate/sdk"
	"github.com/govgate/govgate/sdk/plugintest"
)

// DAOConfig is the config of the example filter.
type DAOConfig struct {
	DAOs []string `json:"daos"`
}

// ShoutConfig is the config of the example transform.
type ShoutConfig struct {
	Prefix string `json:"prefix"`
}

// A plugin registers its metadata and functions in init and has an empty
// main; here they are called natively through sdk/plugintest, as in a unit
// test. Built with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared, the
// same functions run in the gateway. The filter says why it drops a
// notification, with sdk.FilterReason; sdk.Filter takes a func that returns
// only whether to keep it.
func Example() {
	sdk.Plugin(sdk.Meta{Name: "example", Version: "1.0.0"})
	sdk.FilterReason(func(n sdk.Notification, cfg DAOConfig) (keep bool, reason string) {
		if !slices.Contains(cfg.DAOs, n.DAO) {
			return false, fmt.Sprintf("dao %q is not in the list", n.DAO)
		}
		return true, ""
	})
	sdk.Transform(func(n sdk.Notification, body []byte, cfg ShoutConfig) (sdk.Output, error) {
		out, err := json.Marshal(map[string]string{"text": cfg.Prefix + strings.ToUpper(n.Type)})
		return sdk.Output{Body: out, ContentType: "application/json"}, err
	})

	n := sdk.Notification{ID: "n1", Type: sdk.TypeVoteCast, DAO: "uniswap"}
	keep, err := plugintest.Filter(n, DAOConfig{DAOs: []string{"uniswap"}})
	fmt.Println(keep, err)
	keep, err = plugintest.Filter(n, json.RawMessage(`{"dao":["uniswap"]}`))
	fmt.Println(keep, err)
	keep, reason, err := plugintest.FilterReason(n, DAOConfig{DAOs: []string{"compound"}})
	fmt.Println(keep, reason, err)
	out, err := plugintest.Transform(n, nil, ShoutConfig{Prefix: "new: "})
	fmt.Println(string(out.Body), err)
	// Output:
	// true <nil>
	// false filter: decode config: json: unknown field "dao"
	// false dao "uniswap" is not in the list <nil>
	// {"text":"new: VOTE.CAST"} <nil>
}
