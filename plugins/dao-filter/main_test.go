package main

import (
	"encoding/json"
	"testing"

	"github.com/govgate/govgate/sdk"
	"github.com/govgate/govgate/sdk/plugintest"
)

func TestPlugin(t *testing.T) {
	vote := sdk.Notification{ID: "n3", Type: sdk.TypeVoteCast, DAO: "compound", Data: json.RawMessage(`{"weight":"1"}`)}
	plugintest.Run(t,
		plugintest.Case{Name: "second DAO of the list", Input: vote, Config: json.RawMessage(`{"daos":["uniswap","compound"]}`), Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "DAO not listed", Input: vote, Config: Config{DAOs: []string{"uniswap"}}, Want: &plugintest.Want{Reason: `dao "compound" is not in the list`}},
		plugintest.Case{Name: "slug quoted in the reason", Input: sdk.Notification{ID: "q", Type: sdk.TypeVoteCast, DAO: "a\"b\n"}, Config: Config{DAOs: []string{"uniswap"}}, Want: &plugintest.Want{Reason: `dao "a\"b\n" is not in the list`}},
		plugintest.Case{Name: "empty list", Input: vote, Config: json.RawMessage(`{"daos":[]}`), Want: &plugintest.Want{Error: "list at least one DAO"}},
		plugintest.Case{Name: "no config", Input: vote, Want: &plugintest.Want{Error: "list at least one DAO"}},
		plugintest.Case{Name: "typo in the config", Input: vote, Config: json.RawMessage(`{"dao":["compound"]}`), Want: &plugintest.Want{Error: "unknown field"}},
		plugintest.Case{Name: "test notification of another DAO", Input: sdk.Notification{ID: "t", Type: sdk.TypeTest, DAO: "ens"}, Config: Config{DAOs: []string{"compound"}}, Want: &plugintest.Want{Reason: `dao "ens" is not in the list`}},
	)
}
