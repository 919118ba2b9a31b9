package review

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/chexpercept/chexpercept/internal/webapp"
)

// Sessions live in the database (only webapp.SessionHash of the cookie
// value), so a server restart keeps reviewers signed in and a stolen
// database file does not hold usable cookies. A read-only store keeps
// them in memory.

// CreateSession starts a session for the account and returns the cookie
// value and the session's CSRF token.
func (s *Store) CreateSession(ctx context.Context, reviewerID int64, ttl time.Duration) (cookie, csrf string, err error) {
	if cookie, err = webapp.NewToken(); err != nil {
		return "", "", err
	}
	if csrf, err = webapp.NewToken(); err != nil {
		return "", "", err
	}
	now := s.now()
	if s.mem != nil {
		s.mem.Create(cookie, reviewerID, csrf, now.Add(ttl).Unix(), now.Unix())
		return cookie, csrf, nil
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO sessions(id_sha256, reviewer_id, csrf, expires) VALUES(?,?,?,?)`,
		webapp.SessionHash(cookie), reviewerID, csrf, now.Add(ttl).Unix())
	if err == nil {
		// Forget expired sessions now and then; failure is harmless.
		s.db.ExecContext(ctx, `DELETE FROM sessions WHERE expires < ?`, now.Unix())
	}
	return cookie, csrf, err
}

// Session returns the account and CSRF token of a live session, or nil.
func (s *Store) Session(ctx context.Context, cookie string) (*Reviewer, string, error) {
	if !webapp.ValidCookie(cookie) {
		return nil, "", nil
	}
	if s.mem != nil {
		return s.memSession(ctx, cookie)
	}
	var r Reviewer
	var csrf string
	var expires int64
	err := s.db.QueryRowContext(ctx, `SELECT r.id, r.name, r.is_admin, s.csrf, s.expires FROM sessions s JOIN reviewers r ON r.id = s.reviewer_id
		WHERE s.id_sha256 = ?`, webapp.SessionHash(cookie)).Scan(&r.ID, &r.Name, &r.IsAdmin, &csrf, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	if s.now().Unix() > expires {
		return nil, "", nil
	}
	return &r, csrf, nil
}

// EndSession deletes a session.
func (s *Store) EndSession(ctx context.Context, cookie string) error {
	if s.mem != nil {
		s.mem.End(cookie)
		return nil
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE id_sha256 = ?`, webapp.SessionHash(cookie))
	return err
}

// memSession is Session for a read-only store: the session from memory,
// the account from the database.
func (s *Store) memSession(ctx context.Context, cookie string) (*Reviewer, string, error) {
	id, csrf, ok := s.mem.Lookup(cookie, s.now().Unix())
	if !ok {
		return nil, "", nil
	}
	r := Reviewer{ID: id}
	err := s.db.QueryRowContext(ctx, `SELECT name, is_admin FROM reviewers WHERE id = ?`, id).Scan(&r.Name, &r.IsAdmin)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return &r, csrf, nil
}

// accounts adapts the store to the web layer.
type accounts struct{ s *Store }

func account(r *Reviewer) *webapp.Account {
	if r == nil {
		return nil
	}
	return &webapp.Account{ID: r.ID, Name: r.Name, Admin: r.IsAdmin}
}

func (a accounts) Authenticate(ctx context.Context, token string) (*webapp.Account, error) {
	r, err := a.s.Authenticate(ctx, token)
	return account(r), err
}

func (a accounts) CreateSession(ctx context.Context, id int64, ttl time.Duration) (string, string, error) {
	return a.s.CreateSession(ctx, id, ttl)
}

func (a accounts) Session(ctx context.Context, cookie string) (*webapp.Account, string, error) {
	r, csrf, err := a.s.Session(ctx, cookie)
	return account(r), csrf, err
}

func (a accounts) EndSession(ctx context.Context, cookie string) error {
	return a.s.EndSession(ctx, cookie)
}
