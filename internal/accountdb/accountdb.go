// Package accountdb keeps a browser app's accounts and sessions in the
// app's database: the webapp.Backend of the reading and review apps, so
// that the web layer (package webapp) holds no SQL.
package accountdb

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/webapp"
)

// Backend is the webapp.Backend of an app whose accounts and sessions
// live in its SQLite database: an accounts table with the columns id,
// name, token_sha256 (webapp.TokenHash of the sign-in token; NULL for an
// account that cannot sign in) and is_admin, and a sessions table with
// id_sha256 (webapp.SessionHash of the cookie, so a stolen database file
// holds no usable cookie), the account column, csrf and expires (Unix
// seconds). Sessions in the database outlive a server restart. With Mem
// set (a database the server must not write) sessions live in memory and
// end with the process.
type Backend struct {
	DB *appdb.DB
	// Accounts is the accounts table ("readers", "reviewers");
	// AccountColumn the sessions column that names the account.
	Accounts, AccountColumn string
	Now                     func() time.Time // nil: time.Now
	Mem                     *webapp.MemSessions
}

var _ webapp.Backend = (*Backend)(nil)

// Schema is the SQL that creates the accounts and sessions tables (for an
// app's schema; an app adds its own tables that reference the accounts).
func (b *Backend) Schema() string {
	return `
CREATE TABLE ` + b.Accounts + ` (
	id           INTEGER PRIMARY KEY,
	name         TEXT NOT NULL UNIQUE,
	token_sha256 BLOB,
	is_admin     INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE sessions (
	id_sha256 BLOB PRIMARY KEY,
	` + b.AccountColumn + ` INTEGER NOT NULL REFERENCES ` + b.Accounts + `(id),
	csrf      TEXT NOT NULL,
	expires   INTEGER NOT NULL
);
`
}

func (b *Backend) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Authenticate returns the account whose token is token. Every stored hash
// is compared, each in constant time (webapp.MatchToken).
func (b *Backend) Authenticate(ctx context.Context, token string) (*webapp.Account, error) {
	if token == "" {
		return nil, nil
	}
	type row struct {
		a    webapp.Account
		hash []byte
	}
	all, err := appdb.Rows(ctx, b.DB, func(r *row) []any { return []any{&r.a.ID, &r.a.Name, &r.hash, &r.a.Admin} },
		`SELECT id, name, token_sha256, is_admin FROM `+b.Accounts+` WHERE token_sha256 IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	if r, ok := webapp.MatchToken(token, all, func(r row) []byte { return r.hash }); ok {
		return &r.a, nil
	}
	return nil, nil
}

// CreateSession starts a session of the account and forgets expired ones.
func (b *Backend) CreateSession(ctx context.Context, id int64, ttl time.Duration) (cookie, csrf string, err error) {
	if cookie, err = webapp.NewToken(); err != nil {
		return "", "", err
	}
	if csrf, err = webapp.NewToken(); err != nil {
		return "", "", err
	}
	now := b.now()
	if b.Mem != nil {
		b.Mem.Create(cookie, id, csrf, now.Add(ttl).Unix(), now.Unix())
		return cookie, csrf, nil
	}
	err = b.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions(id_sha256, `+b.AccountColumn+`, csrf, expires) VALUES(?,?,?,?)`,
			webapp.SessionHash(cookie), id, csrf, now.Add(ttl).Unix()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE expires < ?`, now.Unix())
		return err
	})
	return cookie, csrf, err
}

// Session returns the account and CSRF token of a live session, or a nil
// account.
func (b *Backend) Session(ctx context.Context, cookie string) (*webapp.Account, string, error) {
	if !webapp.ValidCookie(cookie) {
		return nil, "", nil
	}
	var a webapp.Account
	var csrf string
	var err error
	if b.Mem != nil {
		id, c, ok := b.Mem.Lookup(cookie, b.now().Unix())
		if !ok {
			return nil, "", nil
		}
		a.ID, csrf = id, c
		err = b.DB.QueryRowContext(ctx, `SELECT name, is_admin FROM `+b.Accounts+` WHERE id = ?`, id).Scan(&a.Name, &a.Admin)
	} else {
		var expires int64
		err = b.DB.QueryRowContext(ctx, `SELECT a.id, a.name, a.is_admin, s.csrf, s.expires FROM sessions s JOIN `+b.Accounts+` a ON a.id = s.`+b.AccountColumn+`
			WHERE s.id_sha256 = ?`, webapp.SessionHash(cookie)).Scan(&a.ID, &a.Name, &a.Admin, &csrf, &expires)
		if err == nil && b.now().Unix() > expires {
			return nil, "", nil
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return &a, csrf, nil
}

// EndSession forgets a session.
func (b *Backend) EndSession(ctx context.Context, cookie string) error {
	if b.Mem != nil {
		b.Mem.End(cookie)
		return nil
	}
	_, err := b.DB.ExecContext(ctx, `DELETE FROM sessions WHERE id_sha256 = ?`, webapp.SessionHash(cookie))
	return err
}
