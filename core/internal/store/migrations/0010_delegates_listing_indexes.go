package migrations

import (
	"strings"

	"gorm.io/gorm"
)

// migrate0010 gives each delegate listing an index it can walk in its
// own order, key descending and address ascending, over the delegates it
// lists (the predicate: power or delegators; accounts that only voted,
// or lost both, are never listed). The indexes of 0008 ran both
// ascending: walked backwards they gave a tie's addresses in reverse, so
// the database sorted the tie, which by delegators or votes is most of a
// DAO (180 ms on SQLite for a first page over 100,000 delegates), and a
// later page walked from the top.
//
// The power index is stored the other way, power ascending and address
// descending, and walked backwards: the same order, and a backfill whose
// delegates come with growing power (govgate-bench's) appends to it
// instead of splitting pages at its left edge, which cost 46 bytes an
// event on SQLite and 24 on PostgreSQL. The count indexes are stored as
// they list: there that backfill's delegates join one tie (one
// delegator, no vote) at its end.
func migrate0010(tx *gorm.DB) error {
	where := ` WHERE (power_key > '` + strings.Repeat("0", 78) + `' OR delegators > 0)`
	for _, q := range []string{
		`CREATE INDEX ix_delegates_listed_power ON delegates (dao, power_key, address DESC)` + where,
		`CREATE INDEX ix_delegates_listed_delegators ON delegates (dao, delegators DESC, address)` + where,
		`CREATE INDEX ix_delegates_listed_votes ON delegates (dao, votes_cast DESC, address)` + where,
		`DROP INDEX ix_delegates_power`,
		`DROP INDEX ix_delegates_delegators`,
		`DROP INDEX ix_delegates_votes`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

func rollback0010(tx *gorm.DB) error {
	// As 0008 made them.
	for _, ix := range []struct{ name, column string }{
		{"ix_delegates_power", "power_key"}, {"ix_delegates_delegators", "delegators"}, {"ix_delegates_votes", "votes_cast"},
	} {
		if err := createIndexAsMigrator(tx, "INDEX", ix.name, "delegates", "dao", ix.column, "address"); err != nil {
			return err
		}
	}
	for _, q := range []string{
		`DROP INDEX ix_delegates_listed_power`,
		`DROP INDEX ix_delegates_listed_delegators`,
		`DROP INDEX ix_delegates_listed_votes`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}
