// Package core holds govgate's domain: the types that every adapter speaks
// (DAO, Webhook, Notification, Delivery), the error model the HTTP layers
// map to statuses, and the rules that belong to the domain rather than to
// any one adapter. Adapters live in sub-packages and do not import each other;
// core/cmd/govgate wires them.
package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// GovernorKind names the family of governor contract a DAO uses.
type GovernorKind string

const (
	// KindOZGovernor is OpenZeppelin Governor 4.x/5.x: hashed proposal ids,
	// clock timepoints.
	KindOZGovernor GovernorKind = "oz-governor"
	// KindGovernorBravo is Compound GovernorBravo: sequential ids, block numbers.
	KindGovernorBravo GovernorKind = "governor-bravo"
	// KindGovernorAlpha is Compound's GovernorAlpha as Uniswap deployed it:
	// Bravo's proposal events, but VoteCast(address,uint256,bool,uint256)
	// with a for/against boolean and no reason.
	KindGovernorAlpha GovernorKind = "governor-alpha"
)

// Valid reports whether k is a known governor kind.
func (k GovernorKind) Valid() bool {
	for _, v := range GovernorKinds {
		if k == v {
			return true
		}
	}
	return false
}

// DAO is one governed organisation that govgate follows. DAOs come from the
// configuration file, which seeds them into the store at start, and from
// the admin API, which adds, changes and removes them at run time.
type DAO struct {
	// Slug names the DAO in URLs ({dao}): lowercase letters, digits and
	// hyphens.
	Slug string `json:"slug" yaml:"slug"`
	// Name is the DAO's display name.
	Name string `json:"name" yaml:"name"`
	// ChainID is the chain the governor is on; it must be one of chains.
	ChainID uint64 `json:"chainId" yaml:"chain_id"`
	// Governor is the governor contract's address.
	Governor string `json:"governor" yaml:"governor"`
	// Kind is the governor's family: oz-governor (OpenZeppelin 4.x/5.x),
	// governor-bravo or governor-alpha.
	Kind GovernorKind `json:"kind" yaml:"kind"`
	// StartBlock is the first block indexed: the governor's deployment.
	StartBlock uint64 `json:"startBlock" yaml:"start_block"`
	// Token is the voting token whose delegations are indexed. Empty: the
	// governor's token() (OpenZeppelin, Bravo-style), uni() or comp()
	// (Uniswap's and Compound's governors).
	Token string `json:"token,omitempty" yaml:"token"`
	// NotifyFromBlock, when set, is the first block whose events and
	// time-driven changes are pushed to webhooks; 0 is block 0 (push
	// everything from StartBlock on). Unset: the block after the confirmed
	// head at which the DAO's indexing started, so that a backfilled
	// history is stored and served but not pushed.
	NotifyFromBlock *uint64 `json:"notifyFromBlock,omitempty" yaml:"notify_from_block"`
	// NotifyHistory pushes the whole history from StartBlock on (the same
	// as NotifyFromBlock 0).
	NotifyHistory bool `json:"notifyHistory,omitempty" yaml:"notify_history"`
	// Source says where the DAO is defined: DAOSourceConfig (the
	// configuration file, which alone may change it) or DAOSourceAPI.
	Source string `json:"source,omitempty" yaml:"-"`
	// Generation identifies this definition of the DAO in the store: it
	// changes when the DAO is created again or changed in a way that
	// needs it indexed anew, so that writes for an older definition are
	// refused. 0 for a DAO that is not in the store (tests, tools).
	Generation int64 `json:"-" yaml:"-"`
}

var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

// ValidSlug reports whether s can name a DAO in a URL path: lowercase
// letters, digits and inner hyphens, at most 64 characters.
func ValidSlug(s string) bool { return slugPattern.MatchString(s) }

// WebhookState is the lifecycle state of a webhook registration.
type WebhookState string

const (
	WebhookActive      WebhookState = "active"
	WebhookDeactivated WebhookState = "deactivated"
)

// Webhook is a registered receiver. Its secret never appears here: the store
// keeps it encrypted and hands it out only to the signer.
type Webhook struct {
	ID                  int64        `json:"id"`
	URL                 string       `json:"url"`
	State               WebhookState `json:"state"`
	CreatedAt           time.Time    `json:"createdAt"`
	UpdatedAt           time.Time    `json:"updatedAt"`
	DeactivatedAt       *time.Time   `json:"deactivatedAt,omitempty"`
	DeactivatedReason   string       `json:"deactivatedReason,omitempty"`
	ConsecutiveFailures int          `json:"consecutiveFailures"`
	FailingSince        *time.Time   `json:"failingSince,omitempty"`
	LastDeliveryAt      *time.Time   `json:"lastDeliveryAt,omitempty"`
	// Settings are what the owner chose: subscription, ordering, throttle.
	Settings WebhookSettings `json:"settings"`
	// PreviousSecretExpiresAt is when the secret rotated out last stops
	// verifying; nil when no previous secret is valid.
	PreviousSecretExpiresAt *time.Time `json:"previousSecretExpiresAt,omitempty"`
}

// Notification is one governance event published to webhooks. Its JSON form
// is the delivery body unless a plugin transforms it.
type Notification struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	DAO        string          `json:"dao"`
	OccurredAt time.Time       `json:"occurredAt"`
	Data       json.RawMessage `json:"data"`
}

// TypeNotificationOrphaned is sent for each notification whose block a
// chain reorganisation deeper than the confirmations removed.
const TypeNotificationOrphaned = "notification.orphaned"

// Notification types emitted by the chain indexer. The admin API may publish
// any type that matches NotificationTypePattern.
const (
	TypeProposalCreated = "proposal.created"
	TypeVoteCast        = "vote.cast"
	// TypeVoteOverridden is an OverrideVoteCast of GovernorCountingOverridable:
	// a delegator voted with its own balance in place of its delegate.
	TypeVoteOverridden   = "vote.overridden"
	TypeProposalQueued   = "proposal.queued"
	TypeProposalExecuted = "proposal.executed"
	TypeProposalCanceled = "proposal.canceled"
	TypeProposalExtended = "proposal.extended"
	TypeTest             = "test"
)

// NotificationTypes returns every notification type govgate itself sends:
// the indexer's (proposals, votes, the time-driven proposal states, the
// voting token's delegations) and the admin API's test. It is the one list:
// the Go SDK, the AssemblyScript SDK, the admin page, the JSON Schema and its
// examples, and the example plugins are tested against it
// (TestNotificationTypesAgreeEverywhere in core and the example plugins' own
// tests).
func NotificationTypes() []string {
	return []string{
		TypeProposalCreated, TypeProposalActive, TypeVoteCast, TypeVoteOverridden, TypeProposalEndingSoon,
		TypeProposalSucceeded, TypeProposalDefeated, TypeProposalQueued, TypeProposalExecuted,
		TypeProposalExpired, TypeProposalCanceled, TypeProposalExtended,
		TypeDelegateChanged, TypeDelegateVotesChanged, TypeNotificationOrphaned, TypeTest,
	}
}

var typePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*$`)

// ValidNotificationType reports whether t is a dotted lowercase event name of
// at most 64 bytes, such as "proposal.created".
func ValidNotificationType(t string) bool { return len(t) <= 64 && typePattern.MatchString(t) }

// DeliveryState is where a delivery stands in the queue.
type DeliveryState string

const (
	DeliveryPending   DeliveryState = "pending"   // waiting for its next attempt
	DeliveryInFlight  DeliveryState = "in_flight" // claimed by a worker under a lease
	DeliverySucceeded DeliveryState = "succeeded"
	DeliveryFailed    DeliveryState = "failed"   // attempts exhausted or receiver gone
	DeliveryCanceled  DeliveryState = "canceled" // webhook deactivated before delivery
	DeliveryDropped   DeliveryState = "dropped"  // a plugin filtered it out
	// DeliveryWaiting is a delivery of an ordered webhook held back until
	// every earlier one of that webhook has finished.
	DeliveryWaiting DeliveryState = "waiting"
)

// Delivery is one notification bound for one webhook.
type Delivery struct {
	ID             int64         `json:"id"`
	NotificationID string        `json:"notificationId"`
	WebhookID      int64         `json:"webhookId"`
	State          DeliveryState `json:"state"`
	Attempts       int           `json:"attempts"`
	NextAttemptAt  time.Time     `json:"nextAttemptAt"`
	LastError      string        `json:"lastError,omitempty"`
	LastStatus     int           `json:"lastStatus,omitempty"`
	CreatedAt      time.Time     `json:"createdAt"`
	UpdatedAt      time.Time     `json:"updatedAt"`
	CompletedAt    *time.Time    `json:"completedAt,omitempty"`
}

// Error codes are stable: clients match on them, the README lists them, and
// the HTTP layers map each to one status.
const (
	ECodeInvalidJSON          = "invalid_json"
	ECodeInvalidRequest       = "invalid_request"
	ECodeInvalidURL           = "invalid_url"
	ECodeForbiddenURL         = "forbidden_url"
	ECodeUnsupportedMediaType = "unsupported_media_type"
	ECodeBodyTooLarge         = "body_too_large"
	ECodeNotFound             = "not_found"
	ECodeUnknownDAO           = "unknown_dao"
	ECodeConflict             = "conflict"
	ECodeUnauthorized         = "unauthorized"
	ECodeRateLimited          = "rate_limited"
	ECodeUnavailable          = "unavailable"
	ECodeInternal             = "internal"
	ECodeMethodNotAllowed     = "method_not_allowed"
	// Owner-signed webhook requests: headers missing, a timestamp outside
	// the window, a signature that no active webhook of that url made (an
	// unknown url answers the same), a signature already used.
	ECodeSignatureRequired = "signature_required"
	ECodeStaleTimestamp    = "stale_timestamp"
	ECodeInvalidSignature  = "invalid_signature"
	ECodeReplayedRequest   = "replayed_request"
)

// Error is govgate's one error model: a stable code and a message that is
// safe to show a client. Internal detail stays in the wrapped error and the log.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, ECodeInternal
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ECodeInternal
}

// ErrorMessage returns the client-safe message of err.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// Page selects a page of a list ordered by id, newest first: rows with id
// below Before (0 for the first page), at most Limit of them.
type Page struct {
	Before int64
	Limit  int
}

// PageLimit is the effective size of p: 50 by default, at most 500.
func (p Page) PageLimit() int {
	switch {
	case p.Limit <= 0:
		return 50
	case p.Limit > 500:
		return 500
	}
	return p.Limit
}

// WebhookFilter narrows a webhook listing.
type WebhookFilter struct {
	State  WebhookState // "" for any
	Search string       // substring of the URL
}

// NotificationFilter narrows a notification listing.
type NotificationFilter struct {
	DAO  string
	Type string
	// Before lists notifications stored strictly before this time (zero: now).
	Before time.Time
	Limit  int
}

// Attempt is one recorded attempt of a delivery.
type Attempt struct {
	Number          int       `json:"number"`
	StartedAt       time.Time `json:"startedAt"`
	DurationMs      float64   `json:"durationMs"`
	StatusCode      int       `json:"statusCode,omitempty"`
	Outcome         string    `json:"outcome"`
	Error           string    `json:"error,omitempty"`
	ResponseExcerpt string    `json:"responseExcerpt,omitempty"`
	PluginTrace     string    `json:"pluginTrace,omitempty"`
}

// DeliveryDetail is a delivery with its notification's type and DAO and its
// attempt log, oldest attempt first.
type DeliveryDetail struct {
	Delivery
	NotificationType string    `json:"notificationType"`
	DAO              string    `json:"dao"`
	AttemptLog       []Attempt `json:"attemptLog"`
}

// QueueStats describes the delivery queue.
type QueueStats struct {
	Depth            int64            // pending and in-flight deliveries
	OldestPendingAge time.Duration    // age of the oldest unfinished delivery
	ByState          map[string]int64 // every delivery by state
}

// Job is a claimed delivery with everything needed to send it. It belongs to
// its claimer until the lease runs out.
type Job struct {
	DeliveryID   int64
	LeaseToken   string
	Attempt      int // 1 for the first attempt
	Notification Notification
	Body         []byte // the canonical notification JSON
	WebhookID    int64
	WebhookURL   string
	Secret       string
	// PreviousSecret, while PreviousUntil is ahead, also signs (a rotation's
	// overlap); "" when there is none.
	PreviousSecret string
	PreviousUntil  time.Time
	// Ordered jobs are the head of their webhook's line: finishing one
	// lets the next one go.
	Ordered bool
	// Throttle is the webhook's rate limit, checked before each attempt.
	Throttle Throttle
	// LeaseExpires is when the lease runs out: an attempt that could not
	// end by then is not started, since another process may take the
	// delivery up from that moment.
	LeaseExpires time.Time
	// TraceParent is the W3C traceparent of the notification's trace,
	// stored with it: every attempt, in whatever process, joins that trace.
	// "" when tracing was off as the notification was stored.
	TraceParent string
}

// Reservation is room a dispatcher holds for jobs about to be claimed: at
// most N of them, none for the webhooks in Exclude (at their concurrency
// limit), each leased for Lease. A claim, or a fan-out that hands its new
// deliveries straight to the local dispatcher, fills it; the dispatcher takes
// back whatever room the jobs did not use.
type Reservation struct {
	N       int
	Exclude []int64
	Lease   time.Duration
	// Fresh marks room for a producer's fresh deliveries (the dispatcher's
	// backlog), as opposed to room for a claim.
	Fresh bool
}

// Outcome is what an attempt decided for its delivery.
type Outcome string

const (
	OutcomeSucceeded Outcome = "succeeded" // 2xx: done
	OutcomeRetry     Outcome = "retry"     // failed, another attempt at NextAttemptAt
	OutcomeFailed    Outcome = "failed"    // failed, no attempt left
	OutcomeGone      Outcome = "gone"      // 410: deactivate the webhook
	OutcomeDropped   Outcome = "dropped"   // a plugin filtered the delivery out
)

// AttemptResult records one attempt of a claimed delivery.
type AttemptResult struct {
	Job             Job
	Outcome         Outcome
	StartedAt       time.Time
	Duration        time.Duration
	StatusCode      int
	Error           string
	ResponseExcerpt string
	PluginTrace     string
	NextAttemptAt   time.Time // with OutcomeRetry
}

// ChainEntry is one plugin in a chain, with its JSON config and its
// failure policy ("open" or "closed"; "" for the host's default).
type ChainEntry struct {
	Plugin        string          `json:"plugin"`
	Config        json.RawMessage `json:"config,omitempty"`
	FailurePolicy string          `json:"failurePolicy,omitempty"`
}

// GlobalChain is the webhook id under which the global chain is stored.
const GlobalChain int64 = 0

// StoredPlugin is a plugin module kept in the store, so that every govgate
// process loads the same plugins and an upload survives a restart.
type StoredPlugin struct {
	Name       string    `json:"name"`
	Version    string    `json:"version"`
	SHA256     string    `json:"sha256"`
	Size       int       `json:"size"`
	Source     string    `json:"source"` // "upload" or "dir"
	Enabled    bool      `json:"enabled"`
	UploadedAt time.Time `json:"uploadedAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	Wasm       []byte    `json:"-"`
}

// PluginView is a plugin as the admin API shows it: stored, and loaded in
// this process or not.
type PluginView struct {
	StoredPlugin
	ABI          int             `json:"abi"`
	Hooks        []string        `json:"hooks"`
	ConfigSchema json.RawMessage `json:"configSchema,omitempty"`
	Loaded       bool            `json:"loaded"`
}

// TryResult is what a chain made of a sample notification.
type TryResult struct {
	Keep        bool         `json:"keep"`
	Body        string       `json:"body"`
	ContentType string       `json:"contentType"`
	DurationMs  float64      `json:"durationMs"`
	Steps       []StepView   `json:"steps"`
	DropReason  string       `json:"dropReason,omitempty"`
	Chain       []ChainEntry `json:"chain"`
}

// StepView is one step of a chain run: which plugin and hook ran, what it
// decided, how long it took, what it logged.
type StepView struct {
	Plugin     string   `json:"plugin"`
	Hook       string   `json:"hook,omitempty"`
	Decision   string   `json:"decision"`
	DurationMs float64  `json:"durationMs"`
	Error      string   `json:"error,omitempty"`
	Logs       []string `json:"logs"`
	Cached     bool     `json:"cached,omitempty"`
}
