package calldata

import (
	"math/big"
	"reflect"

	"github.com/ethereum/go-ethereum/common"
)

// innerCall is a call that another call makes.
type innerCall struct {
	Call
	delegate bool
}

// carriers are the functions whose arguments carry calls, by canonical
// signature, with how to read those calls from the decoded arguments.
// They are matched by signature, whatever source decoded the function: the
// round trip has already fixed the arguments' types.
var carriers = map[string]func(c Call, v []any) []innerCall{
	// Safe (GnosisSafe 1.x) execTransaction(to, value, data, operation, …).
	"execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)": func(c Call, v []any) []innerCall {
		op := v[3].(uint8)
		if op > 1 {
			return []innerCall{}
		}
		return []innerCall{{Call: Call{Target: v[0].(common.Address), Value: v[1].(*big.Int), Data: v[2].([]byte)}, delegate: op == 1}}
	},
	// Safe's MultiSend and MultiSendCallOnly: packed transactions.
	"multiSend(bytes)": func(c Call, v []any) []innerCall { return multiSend(v[0].([]byte)) },
	// Multicall3.
	"aggregate((address,bytes)[])":                 func(c Call, v []any) []innerCall { return structCalls(v[0], 0, -1, 1) },
	"blockAndAggregate((address,bytes)[])":         func(c Call, v []any) []innerCall { return structCalls(v[0], 0, -1, 1) },
	"tryAggregate(bool,(address,bytes)[])":         func(c Call, v []any) []innerCall { return structCalls(v[1], 0, -1, 1) },
	"tryBlockAndAggregate(bool,(address,bytes)[])": func(c Call, v []any) []innerCall { return structCalls(v[1], 0, -1, 1) },
	"aggregate3((address,bool,bytes)[])":           func(c Call, v []any) []innerCall { return structCalls(v[0], 0, -1, 2) },
	"aggregate3Value((address,bool,uint256,bytes)[])": func(c Call, v []any) []innerCall {
		return structCalls(v[0], 0, 2, 3)
	},
	// OpenZeppelin TimelockController.
	"schedule(address,uint256,bytes,bytes32,bytes32,uint256)": single,
	"execute(address,uint256,bytes,bytes32,bytes32)":          single,
	"scheduleBatch(address[],uint256[],bytes[],bytes32,bytes32,uint256)": func(c Call, v []any) []innerCall {
		return batch(v[0].([]common.Address), v[1].([]*big.Int), v[2].([][]byte))
	},
	"executeBatch(address[],uint256[],bytes[],bytes32,bytes32)": func(c Call, v []any) []innerCall {
		return batch(v[0].([]common.Address), v[1].([]*big.Int), v[2].([][]byte))
	},
	// Compound's Timelock: a signature and its arguments, or calldata
	// whole when the signature is empty.
	"queueTransaction(address,uint256,string,bytes,uint256)":   compound,
	"executeTransaction(address,uint256,string,bytes,uint256)": compound,
	"cancelTransaction(address,uint256,string,bytes,uint256)":  compound,
	// OpenZeppelin Governor's relay(target, value, data).
	"relay(address,uint256,bytes)": single,
	// UUPS and ERC-1967 proxies: the initializer runs in the proxy's
	// context, by DELEGATECALL to the new implementation.
	"upgradeToAndCall(address,bytes)": func(c Call, v []any) []innerCall {
		return initializer(v[0].(common.Address), v[1].([]byte))
	},
	// OpenZeppelin's ProxyAdmin (4.x and 5.x) upgradeAndCall(proxy,
	// implementation, data): the same, for a transparent proxy upgraded by
	// its admin contract.
	"upgradeAndCall(address,address,bytes)": func(c Call, v []any) []innerCall {
		return initializer(v[1].(common.Address), v[2].([]byte))
	},
}

// initializer is the call an upgrade makes to its new implementation, by
// DELEGATECALL in the proxy's context; none when the upgrade carries no
// data.
func initializer(implementation common.Address, data []byte) []innerCall {
	if len(data) == 0 {
		return []innerCall{}
	}
	return []innerCall{{Call: Call{Target: implementation, Data: data}, delegate: true}}
}

// nestedCalls returns the calls that a call to sig carries, nil if sig
// carries none.
func nestedCalls(sig string, c Call, vals []any) []innerCall {
	f, ok := carriers[sig]
	if !ok {
		return nil
	}
	return f(c, vals)
}

// single reads (target, value, data) from the first three arguments.
func single(c Call, v []any) []innerCall {
	return []innerCall{{Call: Call{Target: v[0].(common.Address), Value: v[1].(*big.Int), Data: v[2].([]byte)}}}
}

func compound(c Call, v []any) []innerCall {
	return []innerCall{{Call: Call{Target: v[0].(common.Address), Value: v[1].(*big.Int), Signature: v[2].(string), Data: v[3].([]byte)}}}
}

// batch zips a TimelockController batch; one whose lengths differ (which
// the timelock refuses) carries no call.
func batch(targets []common.Address, values []*big.Int, datas [][]byte) []innerCall {
	if len(targets) != len(values) || len(targets) != len(datas) {
		return []innerCall{}
	}
	out := make([]innerCall, len(targets))
	for i := range targets {
		out[i] = innerCall{Call: Call{Target: targets[i], Value: values[i], Data: datas[i]}}
	}
	return out
}

// structCalls reads calls from a decoded array of Multicall3 structs: the
// target, value (-1: none) and calldata fields by index.
func structCalls(arr any, target, value, data int) []innerCall {
	s := reflect.ValueOf(arr)
	out := make([]innerCall, s.Len())
	for i := range out {
		e := s.Index(i)
		c := Call{Target: e.Field(target).Interface().(common.Address), Data: e.Field(data).Bytes()}
		if value >= 0 {
			c.Value = e.Field(value).Interface().(*big.Int)
		}
		out[i] = innerCall{Call: c}
	}
	return out
}

// multiSend unpacks MultiSend's encoding: for each transaction, the
// operation (1 byte: 0 call, 1 delegatecall), the target (20 bytes), the
// value (32), the data's length (32) and the data. Malformed input, which
// MultiSend would revert on, carries no call.
func multiSend(b []byte) []innerCall {
	out := []innerCall{}
	for len(b) > 0 {
		if len(b) < 85 || b[0] > 1 {
			return []innerCall{}
		}
		l := new(big.Int).SetBytes(b[53:85])
		if !l.IsUint64() || l.Uint64() > uint64(len(b)-85) {
			return []innerCall{}
		}
		n := int(l.Uint64())
		out = append(out, innerCall{
			Call:     Call{Target: common.BytesToAddress(b[1:21]), Value: new(big.Int).SetBytes(b[21:53]), Data: b[85 : 85+n]},
			delegate: b[0] == 1,
		})
		b = b[85+n:]
	}
	return out
}
