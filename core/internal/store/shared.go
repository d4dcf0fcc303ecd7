package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/govgate/govgate/core"
)

// A chain's shared cursor (chain_shared_cursors) is how far every DAO
// joined to it is indexed: chain_cursors.joined marks those DAOs, whose own
// block and hash columns are then unused. One poll at the head moves the
// shared cursor once, whatever the number of DAOs, and writes rows only for
// the DAOs that had events. It stays exact because the indexer reads every
// joined DAO's logs over the range it moves the cursor across, in the
// transaction that moves it, and because only that transaction moves it
// (fenced by SharedMove.Prev), joins a DAO (when its own cursor equals the
// shared one) or, in Rollback, moves it back.

type sharedCursorRow struct {
	ChainID   uint64 `gorm:"primaryKey;autoIncrement:false"`
	Block     uint64
	Hash      string
	UpdatedAt time.Time
}

func (sharedCursorRow) TableName() string { return "chain_shared_cursors" }

// SharedCursor returns the chain's shared cursor; false if it has none.
func (s *Store) SharedCursor(ctx context.Context, chainID uint64) (core.Cursor, bool, error) {
	var rows []sharedCursorRow
	if err := s.db.WithContext(ctx).Where("chain_id = ?", chainID).Limit(1).Find(&rows).Error; err != nil {
		return core.Cursor{}, false, fmt.Errorf("shared cursor: %w", err)
	}
	if len(rows) == 0 {
		return core.Cursor{}, false, nil
	}
	return core.Cursor{Block: rows[0].Block, Hash: rows[0].Hash}, true, nil
}

// DAOCursor is a DAO's cursor as Cursors lists it.
type DAOCursor = core.DAOCursor

// Cursors returns the cursor of every DAO indexed on the chain, by slug:
// a joined DAO's is the shared cursor (with its own NotifyFrom). One query
// serves a thousand DAOs.
func (s *Store) Cursors(ctx context.Context, chainID uint64) (map[string]core.DAOCursor, error) {
	var rows []cursorRow
	if err := s.db.WithContext(ctx).Select("dao", "chain_id", "block", "hash", "notify_from", "joined", "generation").
		Where("chain_id = ?", chainID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("cursors: %w", err)
	}
	shared, hasShared, err := s.SharedCursor(ctx, chainID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]core.DAOCursor, len(rows))
	for _, r := range rows {
		c := core.DAOCursor{Cursor: core.Cursor{Block: r.Block, Hash: r.Hash, NotifyFrom: r.NotifyFrom}, Joined: r.Joined, Generation: r.Generation}
		if r.Joined && hasShared {
			c.Block, c.Hash = shared.Block, shared.Hash
		}
		out[r.DAO] = c
	}
	return out, nil
}

// ApplyBatches writes one indexing step of a chain in one transaction:
// every DAO's part (as ApplyBatch writes one), the own cursors of the DAOs
// catching up, the shared cursor and the DAOs that join it. It returns the
// DAOs whose parts it left out because they no longer apply (see
// core.ChainBatch), and core.ErrCursorMoved, writing nothing, when the
// shared cursor was moved by another indexer.
func (s *Store) ApplyBatches(ctx context.Context, b core.ChainBatch) (dropped []string, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		dropped = nil
		now := s.now()
		if b.Shared != nil {
			var cur []sharedCursorRow
			q := tx.Where("chain_id = ?", b.ChainID).Limit(1)
			q = s.dialect.lockForUpdate(q)
			if err := q.Find(&cur).Error; err != nil {
				return err
			}
			switch p := b.Shared.Prev; {
			case p == nil && len(cur) > 0, p != nil && (len(cur) == 0 || cur[0].Block != p.Block || cur[0].Hash != p.Hash):
				return core.ErrCursorMoved
			}
		}
		stored, err := s.lockCursors(tx, b)
		if err != nil {
			return err
		}
		gens, err := s.generations(tx, b)
		if err != nil {
			return err
		}
		var moves []cursorRow
		kept := map[string]bool{}
		for _, d := range b.DAOs {
			cur, has := stored[d.DAO]
			ok := true
			switch {
			case d.Generation > 0 && has && cur.Generation != d.Generation:
				// Redefined meanwhile, or a legacy cursor (generation 0)
				// the indexer has not settled (SettleLegacyCursor).
				ok = false
			case d.Generation > 0 && !has && gens[d.DAO] != d.Generation:
				ok = false // removed or redefined before its first cursor was written
			case d.Joined:
				ok = has && cur.Joined
			case d.Prev == nil:
				ok = !has
			default:
				ok = has && !cur.Joined && cur.Block == d.Prev.Block && cur.Hash == d.Prev.Hash
			}
			if !ok {
				dropped = append(dropped, d.DAO)
				continue
			}
			kept[d.DAO] = true
			if _, err := s.applyContent(tx, d); err != nil {
				return err
			}
			if !d.Joined {
				moves = append(moves, cursorRow{DAO: d.DAO, ChainID: b.ChainID, Block: d.Cursor.Block, Hash: d.Cursor.Hash,
					NotifyFrom: d.Cursor.NotifyFrom, Generation: d.Generation, UpdatedAt: now})
			}
		}
		if len(moves) > 0 {
			if err := tx.Clauses(clause.OnConflict{
				Columns:   []clause.Column{{Name: "dao"}},
				DoUpdates: clause.AssignmentColumns([]string{"chain_id", "block", "hash", "notify_from", "generation", "updated_at"}),
			}).CreateInBatches(moves, s.rowsPerInsert()).Error; err != nil {
				return fmt.Errorf("move cursors: %w", err)
			}
		}
		var join []string
		for _, slug := range b.Join {
			if kept[slug] {
				join = append(join, slug)
			}
		}
		for i := 0; i < len(join); i += 500 {
			part := join[i:min(i+500, len(join))]
			if err := tx.Exec(`UPDATE chain_cursors SET joined = true, updated_at = ? WHERE dao IN ?`, now, part).Error; err != nil {
				return fmt.Errorf("join shared cursor: %w", err)
			}
		}
		if len(b.Leave) > 0 && b.Shared != nil {
			block, hash := b.Shared.Next.Block, b.Shared.Next.Hash
			if p := b.Shared.Prev; p != nil {
				block, hash = p.Block, p.Hash
			}
			if err := tx.Exec(`UPDATE chain_cursors SET joined = false, block = ?, hash = ?, updated_at = ? WHERE dao IN ? AND joined`,
				block, hash, now, b.Leave).Error; err != nil {
				return fmt.Errorf("leave shared cursor: %w", err)
			}
		}
		if b.Shared != nil {
			row := sharedCursorRow{ChainID: b.ChainID, Block: b.Shared.Next.Block, Hash: b.Shared.Next.Hash, UpdatedAt: now}
			if err := tx.Clauses(clause.OnConflict{
				Columns:   []clause.Column{{Name: "chain_id"}},
				DoUpdates: clause.AssignmentColumns([]string{"block", "hash", "updated_at"}),
			}).Create(&row).Error; err != nil {
				return fmt.Errorf("move shared cursor: %w", err)
			}
		}
		if err := s.recordBlocks(tx, b.ChainID, b.Blocks, b.PruneBelow); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, core.ErrCursorMoved) {
			return nil, err
		}
		return nil, fmt.Errorf("apply index batches of chain %d: %w", b.ChainID, err)
	}
	return dropped, nil
}

type storedCursor struct {
	DAO        string `gorm:"column:dao"`
	Block      uint64
	Hash       string
	Joined     bool
	Generation int64
}

// lockCursors reads (and on PostgreSQL locks) the stored cursors of the
// batch's DAOs.
func (s *Store) lockCursors(tx *gorm.DB, b core.ChainBatch) (map[string]storedCursor, error) {
	slugs := make([]string, 0, len(b.DAOs))
	for _, d := range b.DAOs {
		slugs = append(slugs, d.DAO)
	}
	sort.Strings(slugs) // one lock order for every writer
	out := make(map[string]storedCursor, len(slugs))
	for i := 0; i < len(slugs); i += 500 {
		var rows []storedCursor
		q := tx.Table("chain_cursors").Select("dao", "block", "hash", "joined", "generation").Where("dao IN ?", slugs[i:min(i+500, len(slugs))]).Order("dao")
		q = s.dialect.lockForUpdate(q)
		if err := q.Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("read cursors: %w", err)
		}
		for _, r := range rows {
			out[r.DAO] = r
		}
	}
	return out, nil
}

// generations returns the stored generation of the DAOs of b that write
// their first cursor with a generation (0 for a DAO not in the store).
func (s *Store) generations(tx *gorm.DB, b core.ChainBatch) (map[string]int64, error) {
	var slugs []string
	for _, d := range b.DAOs {
		if d.Generation > 0 && d.Prev == nil && !d.Joined {
			slugs = append(slugs, d.DAO)
		}
	}
	out := map[string]int64{}
	if len(slugs) == 0 {
		return out, nil
	}
	for i := 0; i < len(slugs); i += 500 {
		var rows []struct {
			Slug       string
			Generation int64
		}
		if err := tx.Table("daos").Select("slug", "generation").Where("slug IN ?", slugs[i:min(i+500, len(slugs))]).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("read dao generations: %w", err)
		}
		for _, r := range rows {
			out[r.Slug] = r.Generation
		}
	}
	return out, nil
}

// NotificationBlock returns the block an indexer notification stands for:
// its data's blockNumber (every chain event's and time-driven change's
// data has one); false for data without one.
func NotificationBlock(data json.RawMessage) (uint64, bool) {
	var m struct {
		BlockNumber *uint64 `json:"blockNumber"`
	}
	if json.Unmarshal(data, &m) != nil || m.BlockNumber == nil {
		return 0, false
	}
	return *m.BlockNumber, true
}

// tagNotifications records the chain and block of newly stored indexer
// notifications (one statement per block), so that a reorganisation finds
// those it orphans.
func tagNotifications(tx *gorm.DB, chainID uint64, notes []core.Notification) error {
	byBlock := map[uint64][]string{}
	for _, n := range notes {
		if block, ok := NotificationBlock(n.Data); ok {
			byBlock[block] = append(byBlock[block], n.ID)
		}
	}
	for block, ids := range byBlock {
		if err := tx.Exec(`UPDATE notifications SET chain_id = ?, block_number = ? WHERE id IN ?`, chainID, block, ids).Error; err != nil {
			return fmt.Errorf("tag notifications: %w", err)
		}
	}
	return nil
}

// reviveOrphans gives a new id to each notification of notes whose id is
// stored already as orphaned: its event is back on the canonical chain
// after a reorganisation (the same transaction in another block, or the
// same milestone seen again), and receivers, told it was orphaned, must
// hear of it again. The new id is derived from the old one and the block,
// so indexing the same block again still stores it once.
func (s *Store) reviveOrphans(tx *gorm.DB, chainID uint64, notes []core.Notification) ([]core.Notification, error) {
	if len(notes) == 0 {
		return notes, nil
	}
	ids := make([]string, len(notes))
	for i, n := range notes {
		ids[i] = n.ID
	}
	var orphaned []string
	for i := 0; i < len(ids); i += 500 {
		var part []string
		if err := tx.Table("notifications").Where("id IN ? AND orphaned_at IS NOT NULL", ids[i:min(i+500, len(ids))]).Pluck("id", &part).Error; err != nil {
			return nil, fmt.Errorf("find orphaned notifications: %w", err)
		}
		orphaned = append(orphaned, part...)
	}
	if len(orphaned) == 0 {
		return notes, nil
	}
	gone := map[string]bool{}
	for _, id := range orphaned {
		gone[id] = true
	}
	out := append([]core.Notification(nil), notes...)
	for i := range out {
		if gone[out[i].ID] {
			out[i].ID = RevivedNotificationID(out[i].ID, out[i].Data)
		}
	}
	// A revived id may itself have been orphaned by a later reorganisation.
	return s.reviveOrphans(tx, chainID, out)
}

// RevivedNotificationID is the id under which a notification that a
// reorganisation orphaned is stored again when its event returns: "evt_"
// and the first 32 hex digits of SHA-256 over the old id and the new data.
func RevivedNotificationID(id string, data json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write(data)
	return "evt_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// OrphanNotificationID is the id of the notification.orphaned notice for
// the notification id: one per orphaned notification, whoever sends it.
func OrphanNotificationID(id string) string {
	sum := sha256.Sum256([]byte("orphaned\x00" + id))
	return "orph_" + hex.EncodeToString(sum[:16])
}

// OrphanedData is the data of a notification.orphaned notice.
type OrphanedData struct {
	ChainID uint64 `json:"chainId"`
	// OrphanedID, OrphanedType and OrphanedBlock name the notification
	// that no longer stands: its block left the canonical chain.
	OrphanedID    string `json:"orphanedId"`
	OrphanedType  string `json:"orphanedType"`
	OrphanedBlock uint64 `json:"orphanedBlock"`
	// CommonAncestor is the highest block the old and new chains share:
	// everything above it was rolled back and is indexed again.
	CommonAncestor     uint64 `json:"commonAncestor"`
	CommonAncestorHash string `json:"commonAncestorHash,omitempty"`
}

// orphanNotifications marks the chain's indexer notifications above block
// n orphaned and stores one notification.orphaned notice for each, in tx.
func (s *Store) orphanNotifications(tx *gorm.DB, chainID uint64, to core.BlockRef) (int, error) {
	var rows []struct {
		ID          string
		Type        string
		DAO         string `gorm:"column:dao"`
		BlockNumber uint64
	}
	if err := tx.Table("notifications").Select("id", "type", "dao", "block_number").
		Where("chain_id = ? AND block_number > ? AND orphaned_at IS NULL", chainID, to.Number).
		Order("block_number, id").Find(&rows).Error; err != nil {
		return 0, fmt.Errorf("find orphaned notifications: %w", err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	now := s.now()
	for i := 0; i < len(rows); i += 500 {
		ids := make([]string, 0, 500)
		for _, r := range rows[i:min(i+500, len(rows))] {
			ids = append(ids, r.ID)
		}
		if err := tx.Exec(`UPDATE notifications SET orphaned_at = ? WHERE id IN ?`, now, ids).Error; err != nil {
			return 0, fmt.Errorf("mark orphaned notifications: %w", err)
		}
	}
	for _, r := range rows {
		data, err := json.Marshal(OrphanedData{ChainID: chainID, OrphanedID: r.ID, OrphanedType: r.Type, OrphanedBlock: r.BlockNumber,
			CommonAncestor: to.Number, CommonAncestorHash: to.Hash})
		if err != nil {
			return 0, err
		}
		n := core.Notification{ID: OrphanNotificationID(r.ID), Type: core.TypeNotificationOrphaned, DAO: r.DAO, OccurredAt: now, Data: data}
		if _, err := s.InsertNotificationTx(tx, n, "indexer"); err != nil {
			return 0, fmt.Errorf("store orphan notice: %w", err)
		}
	}
	return len(rows), nil
}

// OpenDAOs returns the DAOs of a chain with pending, active or queued
// proposals.
func (s *Store) OpenDAOs(ctx context.Context, chainID uint64) ([]string, error) {
	var out []string
	if err := s.db.WithContext(ctx).Table("proposals").Distinct("dao").
		Where("chain_id = ? AND state IN ?", chainID, []string{core.ProposalPending, core.ProposalActive, core.ProposalQueued}).
		Pluck("dao", &out).Error; err != nil {
		return nil, fmt.Errorf("daos with open proposals: %w", err)
	}
	return out, nil
}
