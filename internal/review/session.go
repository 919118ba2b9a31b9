package review

import (
	"time"

	"github.com/chexpercept/chexpercept/internal/accountdb"
)

// accounts is the store's accounts and sessions for the web layer:
// sessions in the database (they outlive a restart), or in memory for a
// read-only store.
func (s *Store) accounts() *accountdb.Backend {
	return &accountdb.Backend{DB: s.db, Accounts: "reviewers", AccountColumn: "reviewer_id",
		Now: func() time.Time { return s.now() }, Mem: s.mem}
}
