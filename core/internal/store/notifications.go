package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

type notificationRow struct {
	ID         string
	Type       string
	DAO        string `gorm:"column:dao"`
	OccurredAt time.Time
	Body       []byte
	Source     string
	CreatedAt  time.Time
	// TraceParent is the W3C traceparent of the notification's trace
	// (migration 0007); "" when tracing was off.
	TraceParent string
}

func (notificationRow) TableName() string { return "notifications" }

// NotificationBody is the canonical JSON form of n: the delivery body
// unless a plugin transforms it.
func NotificationBody(n core.Notification) ([]byte, error) {
	data := n.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			return nil, fmt.Errorf("notification data: %w", err)
		}
		data = buf.Bytes()
	}
	n.Data = data
	n.OccurredAt = n.OccurredAt.UTC().Truncate(time.Millisecond)
	return json.Marshal(n)
}

// CreateNotification stores n and, in the same transaction, one pending
// delivery for every active webhook. When a notification with the same id
// exists, nothing changes and created is false. It returns only once the
// transaction is committed.
func (s *Store) CreateNotification(ctx context.Context, n core.Notification, source string) (created bool, err error) {
	return s.CreateNotificationHandoff(ctx, n, source, nil)
}

// Handoff is the local dispatcher as a producer sees it
// (delivery.Dispatcher): room reserved before the fan-out, the jobs leased
// in it handed over after the commit, and a wake-up when the fan-out left
// deliveries in the queue for it to claim.
type Handoff interface {
	Reserve(max int) core.Reservation
	Hand(r core.Reservation, jobs []core.Job)
	Wake()
}

// fanOut is what storing a notification did: whether it was new, the
// deliveries leased to the local dispatcher, and whether any were left
// pending in the queue.
type fanOut struct {
	created bool
	jobs    []core.Job
	queued  bool
	// ordered lists the ordered webhooks that got a delivery (waiting) and
	// whose lines may need a head: on PostgreSQL only the lines that had
	// none (see subscribedFanOutPG), on SQLite every one that got one.
	ordered []int64
}

// CreateNotificationHandoff is CreateNotification in a process that also
// delivers: as many of the new deliveries as h has room for are stored
// already in flight, leased to h, and handed to it once the transaction
// commits; the rest are pending as usual. A fresh notification's deliveries
// thus skip the claim (a row write and a round trip each). Nothing is only
// in memory: if the process dies before the attempts are recorded, the
// leases run out and any process takes the deliveries up again, exactly as
// after a crash mid-claim.
func (s *Store) CreateNotificationHandoff(ctx context.Context, n core.Notification, source string, h Handoff) (created bool, err error) {
	var r core.Reservation
	if h != nil {
		r = h.Reserve(math.MaxInt32)
	}
	tp, end := s.startTrace(ctx, n)
	var f fanOut
	f, err = s.dialect.createNotification(ctx, s, n, source, r, tp)
	if err != nil {
		f = fanOut{}
	}
	if end != nil {
		end(f.created)
	}
	if h != nil {
		h.Hand(r, f.jobs)
		if f.queued {
			h.Wake()
		}
	}
	if err != nil {
		return false, fmt.Errorf("create notification: %w", err)
	}
	return f.created, nil
}

// InsertNotificationTx is CreateNotification inside the caller's
// transaction, for producers (the indexer) that must store a notification
// atomically with their own state.
func (s *Store) InsertNotificationTx(tx *gorm.DB, n core.Notification, source string) (bool, error) {
	var f fanOut
	var err error
	tp, end := s.startTrace(tx.Statement.Context, n)
	f, err = s.dialect.insertNotificationTx(tx, s, n, source, tp)
	if end != nil {
		end(err == nil && f.created)
	}
	return f.created, err
}

// NotificationTracer starts a notification's trace as it is stored
// (tracing.Tracing): it returns the W3C traceparent stored with the
// notification, which every delivery attempt joins, and end, which the
// store calls once it knows whether the notification was new.
type NotificationTracer interface {
	StartNotification(ctx context.Context, n core.Notification) (traceParent string, end func(stored bool))
}

// startTrace starts n's trace, if tracing is on.
func (s *Store) startTrace(ctx context.Context, n core.Notification) (string, func(bool)) {
	if s.tracer == nil {
		return "", nil
	}
	return s.tracer.StartNotification(ctx, n)
}

// insertNotificationPG is insertNotification on PostgreSQL, in one
// statement: the notification and, unless its id was already stored, its
// deliveries, those for the first r.N active webhooks by id (less
// r.Exclude) that take it in flight under a new lease and the rest pending.
// Fan-out for 100,000 webhooks is still one statement.
//
// A delivery is leased when its webhook is not excluded and comes no later
// than the last of the r.N leased (c, computed once): a comparison a row,
// where joining each row against the leased ones cost PostgreSQL a loop
// over them (it estimates a CTE at one row), r.N times the webhooks' work.
//
// Two statements do this. The plain one is for when no active webhook has
// chosen a subscription or ordering, as in most deployments: every active
// webhook takes the notification, and it costs what fan-out cost before
// those existed. The subscribed one matches subscriptions and puts ordered
// webhooks' deliveries in line. The plain one writes nothing when
// settingsInUse, which it reads in its own snapshot, and says so; the
// subscribed one then runs.
//
// inTx says that q is a producer's transaction, which may store more
// notifications (see lockAllLinesPG).
func (s *Store) insertNotificationPG(ctx context.Context, q querier, n core.Notification, source string, r core.Reservation, traceParent string, inTx bool) (fanOut, error) {
	body, err := NotificationBody(n)
	if err != nil {
		return fanOut{}, err
	}
	token := ""
	if r.N > 0 {
		if token, err = newToken(); err != nil {
			return fanOut{}, err
		}
	}
	now := s.now()
	exclude := append([]int64{}, r.Exclude...) // never NULL: = ANY(NULL) would exclude everything
	args := []any{n.ID, n.Type, n.DAO, n.OccurredAt.UTC(), body, source, now,
		string(core.WebhookActive), exclude, r.N,
		string(core.DeliveryPending), string(core.DeliveryInFlight), now.Add(r.Lease), token, traceParent}
	if s.plainFanOut() {
		f, plain, err := s.fanOutPG(ctx, q, true, plainFanOutPG, args, n.ID, body, traceParent, token, now.Add(r.Lease))
		if err != nil || plain {
			return f, err
		}
		s.settingsFound()
	}
	if inTx {
		if _, err := q.ExecContext(ctx, lockAllLinesPG, string(core.WebhookActive)); err != nil {
			return fanOut{}, fmt.Errorf("lock ordered lines: %w", err)
		}
	}
	// The subscription's condition binds after the statement's own 15
	// parameters.
	want, wantArgs := s.subscribed(n.Type, n.DAO)
	f, _, err := s.fanOutPG(ctx, q, false, subscribedFanOutPG(s.bindFrom(want, 16)), append(args, wantArgs...), n.ID, body, traceParent, token, now.Add(r.Lease))
	return f, err
}

// plainFanOutPG is insertNotificationPG's statement for webhooks without
// settings: it stores nothing, and its first column says so, when
// settingsInUse. Its jobs have no throttle, which no active webhook has
// then.
const plainFanOutPG = `WITH g AS (SELECT ` + settingsInUse + ` AS chosen),
	n AS (INSERT INTO notifications (id, type, dao, occurred_at, body, source, created_at, trace_parent)
		SELECT $1, $2, $3, $4::timestamptz, $5::bytea, $6, $7::timestamptz, $15 WHERE NOT (SELECT chosen FROM g)
		ON CONFLICT (id) DO NOTHING RETURNING id),
	w AS (SELECT id FROM webhooks WHERE state = $8 AND EXISTS (SELECT 1 FROM n)),
	l AS (SELECT id FROM w WHERE NOT (id = ANY($9::bigint[])) ORDER BY id LIMIT $10),
	c AS MATERIALIZED (SELECT max(id) AS last FROM l),
	ins AS (INSERT INTO deliveries (notification_id, webhook_id, state, next_attempt_at, attempts, lease_token, last_status, last_error, created_at, updated_at)
		SELECT $1, w.id,
			CASE WHEN NOT w.leased THEN $11::text ELSE $12::text END,
			CASE WHEN NOT w.leased THEN $7::timestamptz ELSE $13::timestamptz END,
			CASE WHEN NOT w.leased THEN 0 ELSE 1 END,
			CASE WHEN NOT w.leased THEN '' ELSE $14::text END,
			0, '', $7, $7
		FROM (SELECT id, COALESCE(id <= (SELECT last FROM c) AND NOT (id = ANY($9::bigint[])), false) AS leased FROM w) AS w
		RETURNING id, webhook_id, lease_token)
	SELECT (SELECT chosen FROM g), EXISTS (SELECT 1 FROM n), EXISTS (SELECT 1 FROM ins WHERE lease_token = ''),
		x.id, x.webhook_id, x.url, x.secret_ciphertext, x.prev_secret_ciphertext, x.prev_secret_expires_at
	FROM (SELECT 1) AS one LEFT JOIN (
		SELECT ins.id, ins.webhook_id, wh.url, wh.secret_ciphertext, wh.prev_secret_ciphertext, wh.prev_secret_expires_at
		FROM ins JOIN webhooks wh ON wh.id = ins.webhook_id WHERE ins.lease_token <> ''
	) AS x ON true
	ORDER BY x.webhook_id`

// lockAllLinesPG locks every active ordered webhook's row ($1: active), in
// id order, before a producer's transaction fans a notification out. Such
// a transaction may store many notifications (an indexer's batch), each
// reaching its own set of lines (subscriptions), and each fan-out that
// gives a line its head locks the line's row FOR NO KEY UPDATE until the
// transaction ends. Locked as each notification reached them, two
// producers (two chains' indexers) could each hold one line and wait for
// the other's, and a completion, which locks its lines in id order, could
// hold one a producer waits for while waiting for one the producer took
// earlier: PostgreSQL would abort one side as a deadlock
// (TestProducersIntoOrderedLinesDoNotDeadlock). Locked up front in id
// order, the producer takes its lines in the one order every other
// transaction takes them, at the strongest mode it will need; re-locking a
// row it holds costs it no wait. A webhook made ordered between this
// statement and the fan-out can still be locked out of order: it would
// cost one retried transaction, not a notification.
const lockAllLinesPG = `SELECT id FROM webhooks WHERE ordered = 1 AND state = $1 ORDER BY id FOR NO KEY UPDATE`

// subscribedFanOutPG is insertNotificationPG's statement when webhooks
// have settings: only the webhooks whose subscription (want) takes the
// notification get a delivery, and ordered webhooks' deliveries join their
// lines (waiting), never leased here.
//
// The ordered webhooks' rows are read FOR SHARE (o), in id order, and
// their delivery's state follows what o reads: the lock waits for a
// promotion under way (lockLinesPG) and then reads the row as it
// committed. A line whose ordered_head names a delivery still has a head,
// pending or in flight, whose completion promotes the next in line after
// this statement commits (it cannot lock the row before then); only the
// lines without a head (ordered_head 0) are listed, in the third column,
// for promoteLines to give one. The second column, whether a delivery was
// left pending for a claim, counts no waiting one: a line's arrival wakes
// no dispatcher. A busy line thus costs the fan-out no
// transaction of its own. Were ordered_head to name a finished delivery,
// the dispatchers' sweep (PromoteOrdered) would still promote the line.
func subscribedFanOutPG(want string) string {
	return `WITH n AS (INSERT INTO notifications (id, type, dao, occurred_at, body, source, created_at, trace_parent)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $15) ON CONFLICT (id) DO NOTHING RETURNING id),
		w AS (SELECT id, ordered FROM webhooks WHERE state = $8 AND EXISTS (SELECT 1 FROM n) AND ` + want + `),
		o AS (SELECT id, ordered = 1 AND state = $8 AS lined, ordered_head FROM webhooks WHERE id IN (SELECT id FROM w WHERE ordered = 1) ORDER BY id FOR SHARE),
		l AS (SELECT id FROM w WHERE ordered = 0 AND NOT (id = ANY($9::bigint[])) ORDER BY id LIMIT $10),
		c AS MATERIALIZED (SELECT max(id) AS last FROM l),
		ins AS (INSERT INTO deliveries (notification_id, webhook_id, state, next_attempt_at, attempts, lease_token, last_status, last_error, created_at, updated_at)
			SELECT $1, w.id,
				CASE WHEN w.lined THEN 'waiting' WHEN NOT w.leased THEN $11::text ELSE $12::text END,
				CASE WHEN NOT w.leased THEN $7::timestamptz ELSE $13::timestamptz END,
				CASE WHEN NOT w.leased THEN 0 ELSE 1 END,
				CASE WHEN NOT w.leased THEN '' ELSE $14::text END,
				0, '', $7, $7
			FROM (SELECT w.id, COALESCE(o.lined, false) AS lined,
					COALESCE(w.ordered = 0 AND w.id <= (SELECT last FROM c) AND NOT (w.id = ANY($9::bigint[])), false) AS leased
				FROM w LEFT JOIN o ON o.id = w.id) AS w
			RETURNING id, webhook_id, lease_token, state)
		SELECT EXISTS (SELECT 1 FROM n), EXISTS (SELECT 1 FROM ins WHERE state = $11),
			COALESCE((SELECT string_agg(id::text, ',') FROM o WHERE lined AND ordered_head = 0), ''),
			x.id, x.webhook_id, x.url, x.secret_ciphertext, x.prev_secret_ciphertext, x.prev_secret_expires_at, x.max_per_second, x.burst
		FROM (SELECT 1) AS one LEFT JOIN (
			SELECT ins.id, ins.webhook_id, wh.url, wh.secret_ciphertext, wh.prev_secret_ciphertext, wh.prev_secret_expires_at, wh.max_per_second, wh.burst
			FROM ins JOIN webhooks wh ON wh.id = ins.webhook_id WHERE ins.lease_token <> ''
		) AS x ON true
		ORDER BY x.webhook_id`
}

// fanOutPG runs insertNotificationPG's plain statement (plain) or its
// subscribed one (stmt) and reads what it did; done is false when the
// plain statement found settings in use and stored nothing.
func (s *Store) fanOutPG(ctx context.Context, q querier, plain bool, stmt string, args []any, id string, body []byte, traceParent, token string, expires time.Time) (f fanOut, done bool, err error) {
	rows, err := q.QueryContext(ctx, stmt, args...)
	if err != nil {
		return fanOut{}, false, fmt.Errorf("insert notification: %w", err)
	}
	defer rows.Close()
	var leased []leasedRow
	var chosen bool
	var ordered string
	for rows.Next() {
		var (
			l        leasedRow
			delivery sql.NullInt64
			webhook  sql.NullInt64
			url      sql.NullString
			rate     sql.NullFloat64
			burst    sql.NullInt64
		)
		// The plain statement's columns: whether settings are in use, then
		// the subscribed one's without the ordered lines and the throttle.
		dest := []any{&chosen, &f.created, &f.queued, &delivery, &webhook, &url, &l.sealed, &l.prevSealed, &l.prevUntil}
		if !plain {
			dest = []any{&f.created, &f.queued, &ordered, &delivery, &webhook, &url, &l.sealed, &l.prevSealed, &l.prevUntil, &rate, &burst}
		}
		if err := rows.Scan(dest...); err != nil {
			return fanOut{}, false, fmt.Errorf("insert notification: %w", err)
		}
		if delivery.Valid {
			l.delivery, l.webhook, l.url = delivery.Int64, webhook.Int64, url.String
			l.throttle = core.Throttle{MaxPerSecond: rate.Float64, Burst: int(burst.Int64)}
			leased = append(leased, l)
		}
	}
	if err := rows.Err(); err != nil {
		return fanOut{}, false, fmt.Errorf("insert notification: %w", err)
	}
	rows.Close()
	if chosen {
		return fanOut{}, false, nil
	}
	if ordered != "" {
		f.ordered = parseIDs(ordered)
	}
	if len(leased) > 0 {
		if f.jobs, err = s.leasedJobs(id, body, traceParent, token, expires, leased); err != nil {
			return fanOut{}, false, err
		}
	}
	return f, true, nil
}

// leasedRow is a delivery stored in flight at fan-out, with its webhook.
type leasedRow struct {
	delivery, webhook int64
	url               string
	sealed            []byte
	prevSealed        []byte
	prevUntil         *time.Time
	throttle          core.Throttle
}

// leasedJobs turns deliveries leased at fan-out under token into jobs.
func (s *Store) leasedJobs(id string, body []byte, traceParent, token string, expires time.Time, rows []leasedRow) ([]core.Job, error) {
	note, err := notificationRow{ID: id, Body: body}.domain()
	if err != nil {
		return nil, err
	}
	jobs := make([]core.Job, len(rows))
	now := s.now()
	for i, l := range rows {
		secret, err := s.openSecret(l.url, l.sealed)
		if err != nil {
			return nil, err
		}
		jobs[i] = core.Job{
			DeliveryID: l.delivery, LeaseToken: token, LeaseExpires: expires, Attempt: 1, Notification: note, Body: body,
			WebhookID: l.webhook, WebhookURL: l.url, Secret: secret, TraceParent: traceParent, Throttle: l.throttle,
		}
		if jobs[i].PreviousSecret, jobs[i].PreviousUntil, err = s.openPrevious(l.url, l.prevSealed, l.prevUntil, now); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// insertNotification stores n and its deliveries in tx on SQLite, whose
// single writer makes separate statements as safe as insertNotificationPG's
// one: the notification, the leased deliveries (fanOutLeased), the rest.
// As there, the plain statements serve while no active webhook has chosen
// a subscription or ordering, and the subscribed ones otherwise; the
// transaction holds the database's write lock from its first statement, so
// what the plain ones find about settings holds until it commits.
func (s *Store) insertNotification(tx *gorm.DB, n core.Notification, source string, r core.Reservation, traceParent string) (fanOut, error) {
	body, err := NotificationBody(n)
	if err != nil {
		return fanOut{}, err
	}
	now := s.now()
	res := tx.Exec(`INSERT INTO notifications (id, type, dao, occurred_at, body, source, created_at, trace_parent)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		n.ID, n.Type, n.DAO, n.OccurredAt.UTC(), body, source, now, traceParent)
	if res.Error != nil {
		return fanOut{}, fmt.Errorf("insert notification: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fanOut{}, nil
	}
	if s.plainFanOut() {
		f, plain, err := s.fanOutPlain(tx, n, body, traceParent, r, now)
		if err != nil || plain {
			return f, err
		}
		s.settingsFound()
	}
	return s.fanOutSubscribed(tx, n, body, traceParent, r, now)
}

// fanOutPlain gives every active webhook a delivery of n, as fan-out did
// before webhooks had settings (SQLite): one INSERT … SELECT, or the leased
// ones (fanOutLeased) and then the rest. It writes nothing, and plain is
// false, when settingsInUse, and also when no active webhook is left to
// take n: fanOutSubscribed, in the same transaction, then decides.
func (s *Store) fanOutPlain(tx *gorm.DB, n core.Notification, body []byte, traceParent string, r core.Reservation, now time.Time) (f fanOut, plain bool, err error) {
	pending := `INSERT INTO deliveries (notification_id, webhook_id, state, next_attempt_at, attempts, lease_token, last_status, last_error, created_at, updated_at)
		SELECT ?, id, ?, ?, 0, '', 0, '', ?, ? FROM webhooks WHERE state = ?`
	args := []any{n.ID, string(core.DeliveryPending), now, now, now, string(core.WebhookActive)}
	if r.N == 0 {
		res := tx.Exec(pending+` AND NOT `+settingsInUse, args...)
		if res.Error != nil {
			return fanOut{}, false, fmt.Errorf("fan out notification: %w", res.Error)
		}
		return fanOut{created: true, queued: true}, res.RowsAffected > 0, nil
	}
	jobs, err := s.fanOutLeased(tx, n.ID, body, traceParent, r, now, "", nil, true)
	if err != nil || len(jobs) == 0 {
		return fanOut{}, false, err
	}
	// The leased deliveries are for the first active webhooks by id, less
	// the excluded ones: the rest are those after the last one leased, and
	// the excluded ones.
	after, args := notLeased(nil, args, jobs, r)
	if len(after) == 0 {
		return fanOut{created: true, jobs: jobs}, true, nil // every active webhook's delivery is leased
	}
	res := tx.Exec(pending+" AND ("+strings.Join(after, " OR ")+")", args...)
	if res.Error != nil {
		return fanOut{}, false, fmt.Errorf("fan out notification: %w", res.Error)
	}
	return fanOut{created: true, jobs: jobs, queued: res.RowsAffected > 0}, true, nil
}

// notLeased adds to the conditions in after, ORed, and their args those
// that find the webhooks r's lease did not reach: the ones after the last
// webhook leased (the lease takes the first by id) when the lease was
// full, and the excluded ones.
func notLeased(after []string, args []any, jobs []core.Job, r core.Reservation) ([]string, []any) {
	if len(jobs) == r.N {
		after = append(after, "id > ?")
		args = append(args, jobs[len(jobs)-1].WebhookID)
	}
	if len(r.Exclude) > 0 {
		after = append(after, "id IN ("+marks(len(r.Exclude))+")")
		for _, id := range r.Exclude {
			args = append(args, id)
		}
	}
	return after, args
}

// fanOutSubscribed gives a delivery of n to the active webhooks whose
// subscription wants it (SQLite). Fan-out is one INSERT … SELECT:
// enqueueing for 100,000 webhooks is a single statement, not 100,000 round
// trips. An ordered webhook's delivery joins its line (waiting), whose head
// promoteLines picks.
func (s *Store) fanOutSubscribed(tx *gorm.DB, n core.Notification, body []byte, traceParent string, r core.Reservation, now time.Time) (fanOut, error) {
	want, wantArgs := s.subscribed(n.Type, n.DAO)
	pending := `INSERT INTO deliveries (notification_id, webhook_id, state, next_attempt_at, attempts, lease_token, last_status, last_error, created_at, updated_at)
		SELECT ?, id, CASE WHEN ordered = 1 THEN 'waiting' ELSE ? END, ?, 0, '', 0, '', ?, ? FROM webhooks WHERE state = ? AND ` + want
	args := append([]any{n.ID, string(core.DeliveryPending), now, now, now, string(core.WebhookActive)}, wantArgs...)
	var jobs []core.Job
	if r.N > 0 {
		var err error
		if jobs, err = s.fanOutLeased(tx, n.ID, body, traceParent, r, now, "ordered = 0 AND "+want, wantArgs, false); err != nil {
			return fanOut{}, err
		}
		// The leased deliveries are for the first active unordered webhooks
		// by id that want it, less the excluded ones: the rest are the
		// ordered ones, those after the last one leased, and the excluded
		// ones.
		var after []string
		after, args = notLeased([]string{"ordered = 1"}, args, jobs, r)
		pending += " AND (" + strings.Join(after, " OR ") + ")"
	}
	res := tx.Exec(pending, args...)
	if res.Error != nil {
		return fanOut{}, fmt.Errorf("fan out notification: %w", res.Error)
	}
	f := fanOut{created: true, jobs: jobs, queued: res.RowsAffected > 0}
	if res.RowsAffected > 0 {
		// The ordered webhooks that took it, through their own index: in
		// this transaction, so the same set.
		var ordered []int64
		if err := tx.Raw(`SELECT id FROM webhooks WHERE ordered = 1 AND state = ? AND `+want, append([]any{string(core.WebhookActive)}, wantArgs...)...).Scan(&ordered).Error; err != nil {
			return fanOut{}, fmt.Errorf("fan out notification: %w", err)
		}
		if len(ordered) > 0 {
			if _, err := s.promoteLines(tx, ordered, now); err != nil {
				return fanOut{}, err
			}
		}
	}
	return f, nil
}

// fanOutLeased stores the deliveries of notification id for the first r.N
// active webhooks by id that match (a condition on webhooks, "" for all),
// not counting the excluded ones, in flight under a new lease, and returns
// them as jobs in webhook id order (SQLite; insertNotificationPG does this
// on PostgreSQL). Plain, for fanOutPlain, it stores none, and returns none,
// when settingsInUse, and reads no throttle, which no active webhook has
// then.
func (s *Store) fanOutLeased(tx *gorm.DB, id string, body []byte, traceParent string, r core.Reservation, now time.Time, match string, matchArgs []any, plain bool) ([]core.Job, error) {
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	// The webhooks first, then their deliveries; the single writer (this
	// transaction already wrote) keeps the two consistent.
	var rows []leasedRow
	q, ctx := txQuerier(tx), tx.Statement.Context
	where, args := "state = ?", []any{string(core.WebhookActive)}
	if match != "" {
		where += " AND " + match
		args = append(args, matchArgs...)
	}
	if len(r.Exclude) > 0 {
		where += " AND id NOT IN (" + marks(len(r.Exclude)) + ")"
		for _, id := range r.Exclude {
			args = append(args, id)
		}
	}
	pick := `SELECT id, url, secret_ciphertext, prev_secret_ciphertext, prev_secret_expires_at, max_per_second, burst FROM webhooks WHERE ` + where
	if plain {
		pick = `SELECT id, url, secret_ciphertext, prev_secret_ciphertext, prev_secret_expires_at FROM webhooks WHERE ` + where + ` AND NOT ` + settingsInUse
	}
	res, err := q.QueryContext(ctx, pick+` ORDER BY id LIMIT ?`, append(args, r.N)...)
	if err != nil {
		return nil, fmt.Errorf("fan out notification: %w", err)
	}
	for res.Next() {
		var l leasedRow
		dest := []any{&l.webhook, &l.url, &l.sealed, &l.prevSealed, &l.prevUntil, &l.throttle.MaxPerSecond, &l.throttle.Burst}
		if plain {
			dest = dest[:5]
		}
		if err := res.Scan(dest...); err != nil {
			res.Close()
			return nil, fmt.Errorf("fan out notification: %w", err)
		}
		rows = append(rows, l)
	}
	res.Close()
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("fan out notification: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	// The same webhooks again, as INSERT … SELECT: a VALUES list would
	// bind seven parameters a row, which SQLite's driver does in time that
	// grows with the square of their number.
	ins, err := q.QueryContext(ctx, `INSERT INTO deliveries (notification_id, webhook_id, state, next_attempt_at, attempts, lease_token, last_status, last_error, created_at, updated_at)
		SELECT ?, id, ?, ?, 1, ?, 0, '', ?, ? FROM webhooks WHERE `+where+` ORDER BY id LIMIT ? RETURNING id, webhook_id`,
		append(append([]any{id, string(core.DeliveryInFlight), now.Add(r.Lease), token, now, now}, args...), r.N)...)
	if err != nil {
		return nil, fmt.Errorf("fan out notification: %w", err)
	}
	byWebhook := make(map[int64]int64, len(rows))
	for ins.Next() {
		var d, w int64
		if err := ins.Scan(&d, &w); err != nil {
			ins.Close()
			return nil, fmt.Errorf("fan out notification: %w", err)
		}
		byWebhook[w] = d
	}
	ins.Close()
	if err := ins.Err(); err != nil {
		return nil, fmt.Errorf("fan out notification: %w", err)
	}
	for i := range rows {
		rows[i].delivery = byWebhook[rows[i].webhook]
	}
	return s.leasedJobs(id, body, traceParent, token, now.Add(r.Lease), rows)
}

// Notification returns a stored notification.
func (s *Store) Notification(ctx context.Context, id string) (core.Notification, error) {
	var row notificationRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if err == gorm.ErrRecordNotFound {
			return core.Notification{}, notFound("notification")
		}
		return core.Notification{}, fmt.Errorf("get notification: %w", err)
	}
	return row.domain()
}

func (r notificationRow) domain() (core.Notification, error) {
	var n core.Notification
	if err := json.Unmarshal(r.Body, &n); err != nil {
		return core.Notification{}, fmt.Errorf("decode notification %s: %w", r.ID, err)
	}
	return n, nil
}

// ListNotifications lists notifications newest first.
func (s *Store) ListNotifications(ctx context.Context, f core.NotificationFilter) ([]core.Notification, error) {
	limit := core.Page{Limit: f.Limit}.PageLimit()
	q := s.db.WithContext(ctx).Model(&notificationRow{}).Order("created_at DESC, id DESC").Limit(limit)
	if f.DAO != "" {
		q = q.Where("dao = ?", f.DAO)
	}
	if f.Type != "" {
		q = q.Where("type = ?", f.Type)
	}
	if !f.Before.IsZero() {
		q = q.Where("created_at < ?", f.Before.UTC())
	}
	var rows []notificationRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	out := make([]core.Notification, 0, len(rows))
	for _, r := range rows {
		n, err := r.domain()
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
