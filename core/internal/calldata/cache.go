package calldata

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sync"

	"github.com/govgate/govgate/core"
)

// cacheBytes bounds the decoded actions a Decoder keeps, by an estimate of
// their size: a page of 500 proposals of a few calls each fits many times.
const cacheBytes = 32 << 20

// cache is a least-recently-used map of decoded actions, bounded by the
// estimated size of what it holds.
type cache struct {
	mu    sync.Mutex
	limit int
	used  int
	order *list.List // front: most recent
	items map[[32]byte]*list.Element
}

type cacheEntry struct {
	key  [32]byte
	a    core.Action
	cost int
}

func newCache(limit int) *cache {
	return &cache{limit: limit, order: list.New(), items: map[[32]byte]*list.Element{}}
}

// cacheKey identifies a call on a chain by everything its decoding reads.
func cacheKey(chainID uint64, target, value, sig, data string) [32]byte {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], chainID)
	h.Write(n[:])
	for _, s := range []string{target, value, sig, data} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func (c *cache) get(k [32]byte) (core.Action, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return core.Action{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).a, true
}

// put keeps a, whose calldata is n bytes long. Its cost counts the
// calldata several times over: the action holds it as hex, and its nested
// calls hold their parts of it again.
func (c *cache) put(k [32]byte, a core.Action, n int) {
	cost := 512 + 8*n
	if cost > c.limit/4 {
		return // one huge call must not empty the cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return
	}
	c.items[k] = c.order.PushFront(&cacheEntry{key: k, a: a, cost: cost})
	c.used += cost
	for c.used > c.limit {
		last := c.order.Back()
		e := last.Value.(*cacheEntry)
		c.order.Remove(last)
		delete(c.items, e.key)
		c.used -= e.cost
	}
}
