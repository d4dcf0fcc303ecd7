package store

import (
	"context"
	"database/sql"
	"fmt"
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
	if s.dialect == SQLite {
		key := fmt.Sprintf("%p/%d", s, chainID)
		localLeaseMu.Lock()
		defer localLeaseMu.Unlock()
		if localLeases[key] {
			return nil, false, nil
		}
		localLeases[key] = true
		l.release = func() {
			localLeaseMu.Lock()
			delete(localLeases, key)
			localLeaseMu.Unlock()
		}
		return l, true, nil
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, false, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("chain lock: %w", err)
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, chainLockKey(chainID)).Scan(&ok); err != nil {
		conn.Close()
		return nil, false, fmt.Errorf("chain lock: %w", err)
	}
	if !ok {
		conn.Close()
		return nil, false, nil
	}
	l.conn = conn
	l.release = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// A failed unlock is undone by the close: the lock is the session's.
		_, _ = conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, chainLockKey(chainID))
		conn.Close()
	}
	go l.heartbeat()
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
