package accountdb

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/webapp"
)

// newBackend is a Backend over a new database holding the accounts r1
// (token "tok-r1") and admin ("tok-admin", an admin), with a clock the
// test sets; mem keeps the sessions in memory.
func newBackend(t *testing.T, mem bool) (*Backend, *time.Time) {
	t.Helper()
	now := time.Unix(1_700_000_000, 0)
	b := &Backend{Accounts: "readers", AccountColumn: "reader_id", Now: func() time.Time { return now }}
	spec := appdb.Spec{Kind: "test db", Name: "test database", SchemaID: "test/1", Schema: b.Schema(), Synchronous: "NORMAL"}
	c, err := appdb.Create(nil, filepath.Join(t.TempDir(), "accounts.sqlite"), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Abandon)
	b.DB = c.DB()
	ctx := context.Background()
	for _, a := range []struct {
		name, token string
		admin       bool
	}{{"r1", "tok-r1", false}, {"admin", "tok-admin", true}} {
		if _, err := b.DB.ExecContext(ctx, `INSERT INTO readers(name, token_sha256, is_admin) VALUES(?, ?, ?)`, a.name, webapp.TokenHash(a.token), a.admin); err != nil {
			t.Fatal(err)
		}
	}
	if mem {
		b.Mem = &webapp.MemSessions{}
	}
	return b, &now
}

// TestBackend: a right token signs its account in, a wrong or empty one
// nothing; a session lives until it expires or ends, in the database or
// in memory, and the database keeps only the cookie's hash.
func TestBackend(t *testing.T) {
	ctx := context.Background()
	for _, mem := range []bool{false, true} {
		b, now := newBackend(t, mem)
		for token, want := range map[string]string{"tok-r1": "r1", "tok-admin": "admin", "tok-x": "", "": ""} {
			a, err := b.Authenticate(ctx, token)
			if err != nil || (a == nil) != (want == "") || a != nil && a.Name != want {
				t.Errorf("mem %v: Authenticate(%q) = %+v, %v; want %q", mem, token, a, err, want)
			}
		}
		admin, _ := b.Authenticate(ctx, "tok-admin")
		if !admin.Admin {
			t.Errorf("mem %v: the admin is not an admin", mem)
		}
		cookie, csrf, err := b.CreateSession(ctx, admin.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if a, got, err := b.Session(ctx, cookie); err != nil || a == nil || a.Name != "admin" || !a.Admin || got != csrf {
			t.Errorf("mem %v: Session = %+v, %q, %v", mem, a, got, err)
		}
		var stored int
		if err := b.DB.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE id_sha256 = ?`, webapp.SessionHash(cookie)).Scan(&stored); err != nil || stored != map[bool]int{false: 1, true: 0}[mem] {
			t.Errorf("mem %v: %d sessions stored by hash (%v)", mem, stored, err)
		}
		if a, _, err := b.Session(ctx, "another"+cookie); err != nil || a != nil {
			t.Errorf("mem %v: an unknown cookie: %+v, %v", mem, a, err)
		}
		*now = now.Add(time.Hour + time.Second)
		if a, _, err := b.Session(ctx, cookie); err != nil || a != nil {
			t.Errorf("mem %v: an expired session: %+v, %v", mem, a, err)
		}
		cookie, _, err = b.CreateSession(ctx, admin.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.EndSession(ctx, cookie); err != nil {
			t.Fatal(err)
		}
		if a, _, err := b.Session(ctx, cookie); err != nil || a != nil {
			t.Errorf("mem %v: an ended session: %+v, %v", mem, a, err)
		}
	}
}
