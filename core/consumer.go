package core

import (
	"strings"
	"time"
)

// A webhook's own settings, which its owner chooses at registration and
// changes with signed requests (Svix's filterTypes and rate limit,
// Outpost's topics): what it is sent, in what order, how fast.

// Bounds of the settings and of a rotation's overlap.
const (
	// MaxSubscriptionItems bounds each of a webhook's types and daos lists.
	MaxSubscriptionItems = 64
	// MaxPerSecondLimit is the highest rate an endpoint may ask for: above
	// it the limit means nothing on one gateway.
	MaxPerSecondLimit = 10000
	// MaxBurst bounds the burst an endpoint may ask for.
	MaxBurst = 10000
	// DefaultOverlap is how long a rotated-out secret keeps verifying
	// unless the request says otherwise (Svix and Outpost: 24 h).
	DefaultOverlap = 24 * time.Hour
	// MaxOverlap is the longest overlap a rotation may ask for.
	MaxOverlap = 7 * 24 * time.Hour
)

// Subscription narrows what a webhook receives: a notification is
// delivered when its type matches one of Types (an exact type, or a
// "prefix.*" pattern) and its DAO is one of DAOs. An empty list matches
// everything.
type Subscription struct {
	Types []string `json:"types"`
	DAOs  []string `json:"daos"`
}

// Wants reports whether a notification of type typ for dao matches s.
func (s Subscription) Wants(typ, dao string) bool {
	return matchesAny(s.Types, typ) && (len(s.DAOs) == 0 || contains(s.DAOs, dao))
}

func matchesAny(patterns []string, typ string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if TypeMatches(p, typ) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TypeMatches reports whether notification type typ matches pattern: the
// same type, or, for "prefix.*", any type below prefix ("proposal.*"
// matches "proposal.created" and "proposal.x.y", not "proposal" itself).
func TypeMatches(pattern, typ string) bool {
	if prefix, ok := strings.CutSuffix(pattern, ".*"); ok {
		return strings.HasPrefix(typ, prefix+".")
	}
	return pattern == typ
}

// ValidTypePattern reports whether p can be subscribed to: any notification
// type (the indexer's, and whatever the admin API publishes: it accepts
// every ValidNotificationType, so no fixed list is enforced here), or such a
// type followed by ".*".
func ValidTypePattern(p string) bool {
	if prefix, ok := strings.CutSuffix(p, ".*"); ok {
		return ValidNotificationType(prefix)
	}
	return ValidNotificationType(p)
}

// TypePatternsOf lists the subscription patterns that match typ: typ itself
// and "prefix.*" for each of its proper prefixes. The store matches a
// webhook's subscription against these without parsing it per row.
func TypePatternsOf(typ string) []string {
	out := []string{typ}
	for i := 0; i < len(typ); i++ {
		if typ[i] == '.' {
			out = append(out, typ[:i]+".*")
		}
	}
	return out
}

// Throttle is an endpoint's rate limit: at most MaxPerSecond attempts a
// second on average, with up to Burst at once (a token bucket, computed as
// GCRA in the store so that every govgate process shares it). Zero
// MaxPerSecond: no limit.
type Throttle struct {
	MaxPerSecond float64 `json:"maxPerSecond"`
	Burst        int     `json:"burst"`
}

// On reports whether the throttle limits anything.
func (t Throttle) On() bool { return t.MaxPerSecond > 0 }

// EffectiveBurst is Burst, or 1 when unset.
func (t Throttle) EffectiveBurst() int { return max(t.Burst, 1) }

// WebhookSettings are the settings of a webhook that its owner chooses.
type WebhookSettings struct {
	Subscription
	Ordered bool `json:"ordered"`
	Throttle
}

// SettingsPatch changes some of a webhook's settings; nil fields stay.
type SettingsPatch struct {
	Types        *[]string
	DAOs         *[]string
	Ordered      *bool
	MaxPerSecond *float64
	Burst        *int
}

// Empty reports whether p changes nothing.
func (p SettingsPatch) Empty() bool {
	return p.Types == nil && p.DAOs == nil && p.Ordered == nil && p.MaxPerSecond == nil && p.Burst == nil
}

// Apply returns s changed by p.
func (p SettingsPatch) Apply(s WebhookSettings) WebhookSettings {
	if p.Types != nil {
		s.Types = *p.Types
	}
	if p.DAOs != nil {
		s.DAOs = *p.DAOs
	}
	if p.Ordered != nil {
		s.Ordered = *p.Ordered
	}
	if p.MaxPerSecond != nil {
		s.MaxPerSecond = *p.MaxPerSecond
	}
	if p.Burst != nil {
		s.Burst = *p.Burst
	}
	return s
}

// Actors of a rotation.
const (
	ActorOwner = "owner"
	ActorAdmin = "admin"
)

// Rotation is one rotation of a webhook's secret.
type Rotation struct {
	ID        int64     `json:"id"`
	WebhookID int64     `json:"webhookId"`
	RotatedAt time.Time `json:"rotatedAt"`
	By        string    `json:"by"` // ActorOwner or ActorAdmin
	// OverlapSeconds is how long the previous secret kept verifying.
	OverlapSeconds int64 `json:"overlapSeconds"`
	// PreviousExpiresAt is when the previous secret stopped verifying.
	PreviousExpiresAt time.Time `json:"previousExpiresAt"`
}

// Ordering is where an ordered webhook's line stands.
type Ordering struct {
	Enabled bool `json:"enabled"`
	// Head is the delivery at the front of the line (pending or in flight),
	// nil when the line is empty.
	Head *Delivery `json:"head,omitempty"`
	// Waiting counts deliveries held back behind the head.
	Waiting int64 `json:"waiting"`
	// Blocked is true when the head has failed at least once: everything
	// behind it waits until it succeeds or is given up.
	Blocked       bool   `json:"blocked"`
	BlockedReason string `json:"blockedReason,omitempty"`
}

// WebhookView is a webhook with everything its owner or an administrator
// may read about it: settings, the rotation state and the ordering line.
type WebhookView struct {
	Webhook
	Ordering  Ordering   `json:"ordering"`
	Rotations []Rotation `json:"rotations"`
}

// ReplayResult is what a replay of several deliveries did.
type ReplayResult struct {
	Replayed []Delivery `json:"replayed"`
	// Skipped are the ids of deliveries not replayed: still queued, or not
	// this webhook's.
	Skipped []int64 `json:"skipped"`
}
