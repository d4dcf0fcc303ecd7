package core

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// Where a DAO is defined (DAO.Source).
const (
	// DAOSourceConfig: the configuration file's daos, seeded into the
	// store at start. The file is their one source: the admin API does not
	// change them, or a restart would silently undo the change.
	DAOSourceConfig = "config"
	// DAOSourceAPI: added through the admin API, kept in the store.
	DAOSourceAPI = "api"
)

// FieldError is an input whose field Field is wrong: the admin page shows
// Message under that field, the configuration file names it.
type FieldError struct {
	Field   string // as the YAML file and the admin API name it: "governor", "start_block"
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Check returns the first field of d that cannot work, or nil. It checks
// the shape only; whether the governor answers on its chain is the
// indexer's to check (indexer.Probe).
func (d DAO) Check() *FieldError {
	bad := func(field, format string, args ...any) *FieldError {
		return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case !ValidSlug(d.Slug):
		return bad("slug", "want lowercase letters, digits and hyphens, got %q", d.Slug)
	case strings.TrimSpace(d.Name) == "":
		return bad("name", "required")
	case len(d.Name) > 200:
		return bad("name", "at most 200 characters")
	case d.ChainID == 0:
		return bad("chain_id", "required")
	case !IsHexAddress(d.Governor):
		return bad("governor", "want a 0x-prefixed 20-byte hex address, got %q", d.Governor)
	case !d.Kind.Valid():
		return bad("kind", "want %s, got %q", strings.Join(GovernorKindNames(), ", "), d.Kind)
	case d.Token != "" && !IsHexAddress(d.Token):
		return bad("token", "want a 0x-prefixed 20-byte hex address, got %q", d.Token)
	case d.NotifyHistory && d.NotifyFromBlock != nil && *d.NotifyFromBlock > 0:
		return bad("notify_from_block", "set notify_from_block or notify_history, not both")
	case d.NotifyFromBlock != nil && *d.NotifyFromBlock > 0 && *d.NotifyFromBlock < d.StartBlock:
		return bad("notify_from_block", "%d is below start_block %d", *d.NotifyFromBlock, d.StartBlock)
	}
	return nil
}

// GovernorKinds lists every governor kind govgate indexes.
var GovernorKinds = []GovernorKind{KindOZGovernor, KindGovernorBravo, KindGovernorAlpha}

// GovernorKindNames returns GovernorKinds as strings.
func GovernorKindNames() []string {
	out := make([]string, len(GovernorKinds))
	for i, k := range GovernorKinds {
		out[i] = string(k)
	}
	return out
}

// IsHexAddress reports whether s is a 0x-prefixed 20-byte hex address.
func IsHexAddress(s string) bool {
	if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") {
		return false
	}
	for _, r := range s[2:] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// IndexingChanged reports whether b indexes differently from a: another
// chain, governor, kind, token or start block, which a new generation of
// the DAO's index must follow. Name and notify settings are not indexing.
func (a DAO) IndexingChanged(b DAO) bool {
	return a.ChainID != b.ChainID || !strings.EqualFold(a.Governor, b.Governor) || a.Kind != b.Kind ||
		!strings.EqualFold(a.Token, b.Token) || a.StartBlock != b.StartBlock
}

// DAOCatalog is the set of DAOs govgate follows now. It changes at run
// time, so its holders ask it on each use rather than keep a copy.
type DAOCatalog interface {
	// DAOs returns every DAO, in the order they were defined. The slice is
	// shared: do not modify it.
	DAOs() []DAO
	// DAO returns the DAO with this slug.
	DAO(slug string) (DAO, bool)
}

// FixedDAOs is a catalog that never changes.
type FixedDAOs []DAO

// DAOs implements DAOCatalog.
func (f FixedDAOs) DAOs() []DAO {
	if f == nil {
		return []DAO{}
	}
	return f
}

// DAO implements DAOCatalog.
func (f FixedDAOs) DAO(slug string) (DAO, bool) {
	for _, d := range f {
		if d.Slug == slug {
			return d, true
		}
	}
	return DAO{}, false
}

// LiveDAOs is a catalog whose list is replaced as a whole when the store's
// DAOs change; readers never wait.
type LiveDAOs struct {
	p atomic.Pointer[liveSet]
}

type liveSet struct {
	list   []DAO
	bySlug map[string]int
}

// NewLiveDAOs returns a catalog of daos.
func NewLiveDAOs(daos []DAO) *LiveDAOs {
	l := &LiveDAOs{}
	l.Replace(daos)
	return l
}

// Replace makes daos the catalog.
func (l *LiveDAOs) Replace(daos []DAO) {
	s := &liveSet{list: append([]DAO{}, daos...), bySlug: make(map[string]int, len(daos))}
	for i, d := range s.list {
		s.bySlug[d.Slug] = i
	}
	l.p.Store(s)
}

// DAOs implements DAOCatalog.
func (l *LiveDAOs) DAOs() []DAO { return l.p.Load().list }

// DAO implements DAOCatalog.
func (l *LiveDAOs) DAO(slug string) (DAO, bool) {
	s := l.p.Load()
	i, ok := s.bySlug[slug]
	if !ok {
		return DAO{}, false
	}
	return s.list[i], true
}
