package indexer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/govgate/govgate/core"
)

// delegateChangedData is the data of delegate.changed.
type delegateChangedData struct {
	tokenMeta
	Delegator    string `json:"delegator"`
	FromDelegate string `json:"fromDelegate"`
	ToDelegate   string `json:"toDelegate"`
	// Amount is the delegator's voting units that moved (its balance).
	Amount string `json:"amount"`
}

// delegateVotesChangedData is the data of delegate.votes_changed.
type delegateVotesChangedData struct {
	tokenMeta
	Delegate      string `json:"delegate"`
	PreviousVotes string `json:"previousVotes"`
	NewVotes      string `json:"newVotes"`
	// Delta is NewVotes - PreviousVotes, negative when power left.
	Delta string `json:"delta"`
}

type tokenMeta struct {
	ChainID     uint64 `json:"chainId"`
	Token       string `json:"token"`
	BlockNumber uint64 `json:"blockNumber"`
	BlockHash   string `json:"blockHash"`
	TxHash      string `json:"txHash"`
	LogIndex    uint   `json:"logIndex"`
}

// TokenNotificationID is the deterministic id of the notification of a
// token's delegation log for one DAO: "evt_" and the first 32 hex digits of
// SHA-256 over the chain id (8 bytes, big-endian), the transaction hash,
// the log index (8 bytes, big-endian) and the DAO's slug. Unlike a
// governor's, a token's log concerns every DAO that votes with the token
// (Arbitrum's two governors share ARB), so each DAO has its own id.
func TokenNotificationID(chainID uint64, dao string, txHash common.Hash, logIndex uint) string {
	var buf [8 + 32 + 8]byte
	binary.BigEndian.PutUint64(buf[:8], chainID)
	copy(buf[8:40], txHash[:])
	binary.BigEndian.PutUint64(buf[40:], uint64(logIndex))
	sum := sha256.Sum256(append(buf[:], dao...))
	return "evt_" + hex.EncodeToString(sum[:16])
}

// applyToken folds one delegation log of the DAO's token into the batch.
func (b *builder) applyToken(l *types.Log) {
	tl, err := decodeTokenLog(l)
	if err == errNotGovernorEvent {
		return
	}
	if err != nil {
		b.r.log.Warn("undecodable token log", "dao", b.d.dao.Slug, "tx", l.TxHash, "log_index", l.Index, "err", err)
		return
	}
	ev := core.TokenEvent{
		DAO: b.d.dao.Slug, ChainID: b.r.chainID, Token: b.hex(l.Address),
		BlockNumber: l.BlockNumber, BlockHash: l.BlockHash.Hex(), TxHash: l.TxHash.Hex(), LogIndex: l.Index, At: b.blockTime,
	}
	if tl.changed {
		ev.Kind = core.TypeDelegateChanged
		ev.Delegator, ev.FromDelegate, ev.ToDelegate = b.hex(tl.delegator), b.hex(tl.from), b.hex(tl.to)
		b.lastChange = len(b.batch.TokenEvents)
	} else {
		ev.Kind = core.TypeDelegateVotesChanged
		ev.Delegate, ev.PreviousVotes, ev.NewVotes = b.hex(tl.delegate), tl.previousVotes.String(), tl.newVotes.String()
		if i := b.lastChange; i >= 0 {
			dc := &b.batch.TokenEvents[i]
			delta := new(big.Int).Sub(tl.newVotes, tl.previousVotes)
			if dc.TxHash == ev.TxHash && dc.Moved == "" {
				switch {
				case ev.Delegate == dc.ToDelegate && delta.Sign() > 0:
					dc.Moved = delta.String()
				case ev.Delegate == dc.FromDelegate && delta.Sign() < 0:
					dc.Moved = delta.Neg(delta).String()
				}
			}
		}
	}
	b.batch.TokenEvents = append(b.batch.TokenEvents, ev)
	b.r.metrics.event(b.d.dao.Slug, ev.Kind)
	if l.BlockNumber < b.notifyFrom {
		return
	}
	b.batch.Notifications = append(b.batch.Notifications, core.Notification{
		ID: TokenNotificationID(b.r.chainID, b.d.dao.Slug, l.TxHash, l.Index), Type: ev.Kind, DAO: b.d.dao.Slug, OccurredAt: b.blockTime,
	})
	b.tokenNotes = append(b.tokenNotes, [2]int{len(b.batch.Notifications) - 1, len(b.batch.TokenEvents) - 1})
}

// finishTokens renders the batch's delegation notifications, once every
// DelegateChanged knows the amount that moved with it.
func (b *builder) finishTokens() error {
	for _, tn := range b.tokenNotes {
		ev := b.batch.TokenEvents[tn[1]]
		meta := tokenMeta{ChainID: ev.ChainID, Token: ev.Token, BlockNumber: ev.BlockNumber, BlockHash: ev.BlockHash, TxHash: ev.TxHash, LogIndex: ev.LogIndex}
		var data any
		if ev.Kind == core.TypeDelegateChanged {
			moved := ev.Moved
			if moved == "" {
				moved = "0" // no votes moved: a zero balance, or the same delegate again
			}
			data = delegateChangedData{tokenMeta: meta, Delegator: ev.Delegator, FromDelegate: ev.FromDelegate, ToDelegate: ev.ToDelegate, Amount: moved}
		} else {
			delta := new(big.Int).Sub(parseDec(ev.NewVotes), parseDec(ev.PreviousVotes))
			data = delegateVotesChangedData{tokenMeta: meta, Delegate: ev.Delegate, PreviousVotes: ev.PreviousVotes, NewVotes: ev.NewVotes, Delta: delta.String()}
		}
		raw, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("encode %s data: %w", ev.Kind, err)
		}
		b.batch.Notifications[tn[0]].Data = raw
	}
	return nil
}

// hex is a.Hex(), EIP-55, computed once per address and batch: its
// checksum is a Keccak-256, and a delegation names the same accounts in
// its two events.
func (b *builder) hex(a common.Address) string {
	if h, ok := b.hexes[a]; ok {
		return h
	}
	if b.hexes == nil {
		b.hexes = map[common.Address]string{}
	}
	h := a.Hex()
	b.hexes[a] = h
	return h
}
