package calldata

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// BenchmarkDecode decodes one action per iteration, without the cache,
// from a mix that proposals resemble: calls to every function of the
// curated set with random arguments, and one call in ten a batch (a
// TimelockController scheduleBatch of a Multicall3 aggregate3 and a
// transfer) whose nested calls are decoded too. It reports the median and
// the 99th percentile of one action's decoding, in microseconds; the bench
// task prints them as decode_us_per_action.
func BenchmarkDecode(b *testing.B) {
	d := newDecoder(b, Config{})
	r := rand.New(rand.NewPCG(5, 5))
	var calls []Call
	for _, m := range curatedMethods(b) {
		data, _ := encodeCall(b, r, m)
		calls = append(calls, Call{Target: usdc, Data: data})
	}
	transfer := pack(b, "transfer(address,uint256)", alice, big.NewInt(2_500_000))
	multicall := pack(b, "aggregate3((address,bool,bytes)[])", []struct {
		F0 common.Address
		F1 bool
		F2 []byte
	}{{usdc, false, transfer}, {usdc, false, transfer}})
	batch := pack(b, "scheduleBatch(address[],uint256[],bytes[],bytes32,bytes32,uint256)",
		[]common.Address{safe, usdc}, []*big.Int{big.NewInt(0), big.NewInt(0)}, [][]byte{multicall, transfer}, [32]byte{}, [32]byte{}, big.NewInt(3600))
	mixed := make([]Call, 0, len(calls)*10/9)
	for i, c := range calls {
		mixed = append(mixed, c)
		if i%9 == 8 {
			mixed = append(mixed, Call{Target: safe, Data: batch})
		}
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		c := mixed[i%len(mixed)]
		start := time.Now()
		a := d.Decode(1, c)
		durations = append(durations, time.Since(start))
		if !a.Decoded {
			b.Fatalf("%x not decoded", c.Data[:4])
		}
	}
	b.StopTimer()
	slices.Sort(durations)
	pct := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "decode_p50_us")
	b.ReportMetric(pct(0.99), "decode_p99_us")
	b.ReportMetric(float64(len(mixed)), "actions")
}
