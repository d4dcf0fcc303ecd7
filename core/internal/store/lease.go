package store

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// ChainLease is the right to index one chain. On PostgreSQL it is a
// session-level advisory lock held on a connection of its own: when the
// holding process dies its session ends, the lock is released, and another
// process takes the chain over at its next try. On SQLite it is exclusive
// within the process (SQLite serves one process).
type ChainLease struct {
	conn     *sql.Conn
	release  func()
	done     chan struct{}
	once     sync.Once
	stopBeat chan struct{}
}

var (
	localLeaseMu sync.Mutex
	localLeases  = map[string]bool{}
)

// chainLockKey is the advisory lock key of a chain's indexer.
func chainLockKey(chainID uint64) int64 { return int64(0x676f76<<32) | int64(chainID&0xffffffff) }

// TryChainLock takes the chain's lease if nobody holds it; it never waits.
func (s *Store) TryChainLock(ctx context.Context, chainID uint64) (*ChainLease, bool, error) {
	l := &ChainLease{done: make(chan struct{}), stopBeat: make(chan struct{})}
	ok, err := s.dialect.tryChainLock(ctx, s, chainID, l)
	if !ok || err != nil {
		return nil, false, err
	}
	return l, true, nil
}

// heartbeat notices a lost session: the lock went with it.
func (l *ChainLease) heartbeat() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-l.stopBeat:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := l.conn.PingContext(ctx)
			cancel()
			if err != nil {
				l.end()
				return
			}
		}
	}
}

func (l *ChainLease) end() {
	l.once.Do(func() {
		close(l.stopBeat)
		l.release()
		close(l.done)
	})
}

// Done is closed when the lease is lost or released.
func (l *ChainLease) Done() <-chan struct{} { return l.done }

// Release gives the lease up; it is safe to call more than once.
func (l *ChainLease) Release() { l.end() }
