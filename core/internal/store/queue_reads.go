package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

// Reading the queue: a webhook's deliveries with their attempts, one
// delivery, and the queue's counts.

// ListDeliveries lists a webhook's deliveries newest first with their attempts.
// Finished deliveries come from ix_deliveries_webhook_done, unfinished ones
// from the queue's index ix_deliveries_due; without a state filter the two
// halves are merged.
func (s *Store) ListDeliveries(ctx context.Context, webhookID int64, state core.DeliveryState, p core.Page) (items []core.DeliveryDetail, next int64, err error) {
	limit := p.PageLimit() + 1
	half := func(pred string) (string, []any) {
		// The unfinished half reads the queue's index and sorts what it
		// finds: ordered by the bare id, PostgreSQL would rather walk the
		// primary key backwards through every finished delivery, expecting
		// the webhook's few queued ones to turn up early.
		order := "id DESC"
		if pred == unfinished {
			order = "id + 0 DESC"
		}
		q, args := `SELECT * FROM deliveries WHERE webhook_id = ? AND `+pred, []any{webhookID}
		if p.Before > 0 {
			q += " AND id < ?"
			args = append(args, p.Before)
		}
		if state != "" {
			q += " AND state = ?"
			args = append(args, string(state))
		}
		return q + " ORDER BY " + order + " LIMIT ?", append(args, limit)
	}
	var q string
	var args []any
	switch state {
	case core.DeliveryPending, core.DeliveryInFlight:
		q, args = half(unfinished)
	case "":
		done, a1 := half(finished)
		queued, a2 := half(unfinished)
		q, args = `SELECT * FROM (`+done+`) AS done UNION ALL SELECT * FROM (`+queued+`) AS queued ORDER BY id DESC LIMIT ?`, append(append(a1, a2...), limit)
	default:
		q, args = half(finished)
	}
	var rows []deliveryRow
	if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list deliveries: %w", err)
	}
	if len(rows) > p.PageLimit() {
		rows = rows[:p.PageLimit()]
		next = rows[len(rows)-1].ID
	}
	if len(rows) == 0 {
		return []core.DeliveryDetail{}, 0, nil
	}
	ids := make([]int64, len(rows))
	nids := make([]string, len(rows))
	for i, r := range rows {
		ids[i], nids[i] = r.ID, r.NotificationID
	}
	var atts []attemptRow
	if err := s.db.WithContext(ctx).Where("delivery_id IN ?", ids).Order("id").Find(&atts).Error; err != nil {
		return nil, 0, fmt.Errorf("list attempts: %w", err)
	}
	var notes []notificationRow
	if err := s.db.WithContext(ctx).Select("id", "type", "dao").Where("id IN ?", nids).Find(&notes).Error; err != nil {
		return nil, 0, fmt.Errorf("list deliveries: %w", err)
	}
	byNote := map[string]notificationRow{}
	for _, n := range notes {
		byNote[n.ID] = n
	}
	byDelivery := map[int64][]core.Attempt{}
	for _, a := range atts {
		byDelivery[a.DeliveryID] = append(byDelivery[a.DeliveryID], a.domain())
	}
	items = make([]core.DeliveryDetail, len(rows))
	for i, r := range rows {
		log := byDelivery[r.ID]
		if a := r.successAttempt(); a != nil {
			log = append(log, a.domain())
		}
		if log == nil {
			log = []core.Attempt{}
		}
		n := byNote[r.NotificationID]
		items[i] = core.DeliveryDetail{Delivery: r.domain(), NotificationType: n.Type, DAO: n.DAO, AttemptLog: log}
	}
	return items, next, nil
}

// Delivery returns one delivery.
func (s *Store) Delivery(ctx context.Context, id int64) (core.Delivery, error) {
	var row deliveryRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Delivery{}, notFound("delivery")
		}
		return core.Delivery{}, fmt.Errorf("get delivery: %w", err)
	}
	return row.domain(), nil
}

// QueueStats counts the queue.
func (s *Store) QueueStats(ctx context.Context) (core.QueueStats, error) {
	var rows []struct {
		State string
		N     int64
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT state, COUNT(*) AS n FROM deliveries GROUP BY state`).Scan(&rows).Error; err != nil {
		return core.QueueStats{}, fmt.Errorf("queue stats: %w", err)
	}
	st := core.QueueStats{ByState: map[string]int64{}}
	for _, r := range rows {
		st.ByState[r.State] = r.N
		if r.State == string(core.DeliveryPending) || r.State == string(core.DeliveryInFlight) || r.State == string(core.DeliveryWaiting) {
			st.Depth += r.N
		}
	}
	if st.Depth > 0 {
		// Ids grow with creation time, so the lowest unfinished id is the
		// oldest, found through the primary key.
		var oldest []deliveryRow
		if err := s.db.WithContext(ctx).Select("created_at").Where(unfinished).
			Order("id").Limit(1).Find(&oldest).Error; err != nil {
			return core.QueueStats{}, fmt.Errorf("queue stats: %w", err)
		}
		if len(oldest) == 1 {
			st.OldestPendingAge = s.now().Sub(oldest[0].CreatedAt.UTC())
		}
	}
	return st, nil
}
