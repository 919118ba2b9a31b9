package review

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"time"
)

// Sessions live in the database (only a hash of the cookie value), so a
// server restart keeps reviewers signed in and a stolen database file does
// not hold usable cookies.

func randomID() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func sessionHash(id string) []byte {
	h := sha256.Sum256([]byte("session\x00" + id))
	return h[:]
}

// CreateSession starts a session for the account and returns the cookie
// value and the session's CSRF token.
func (s *Store) CreateSession(ctx context.Context, reviewerID int64, ttl time.Duration) (cookie, csrf string, err error) {
	if cookie, err = randomID(); err != nil {
		return "", "", err
	}
	if csrf, err = randomID(); err != nil {
		return "", "", err
	}
	now := s.now()
	if s.mem != nil {
		s.mem.create(sessionHash(cookie), memSession{reviewerID, csrf, now.Add(ttl).Unix()}, now.Unix())
		return cookie, csrf, nil
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO sessions(id_sha256, reviewer_id, csrf, expires) VALUES(?,?,?,?)`,
		sessionHash(cookie), reviewerID, csrf, now.Add(ttl).Unix())
	if err == nil {
		// Forget expired sessions now and then; failure is harmless.
		s.db.ExecContext(ctx, `DELETE FROM sessions WHERE expires < ?`, now.Unix())
	}
	return cookie, csrf, err
}

// Session returns the account and CSRF token of a live session, or nil.
// The lookup is by the SHA-256 of the cookie value (an index lookup on a
// hash reveals nothing useful about the cookie through timing).
func (s *Store) Session(ctx context.Context, cookie string) (*Reviewer, string, error) {
	if cookie == "" || len(cookie) > 128 {
		return nil, "", nil
	}
	if s.mem != nil {
		return s.memSession(ctx, cookie)
	}
	var r Reviewer
	var csrf string
	var expires int64
	err := s.db.QueryRowContext(ctx, `SELECT r.id, r.name, r.is_admin, s.csrf, s.expires FROM sessions s JOIN reviewers r ON r.id = s.reviewer_id
		WHERE s.id_sha256 = ?`, sessionHash(cookie)).Scan(&r.ID, &r.Name, &r.IsAdmin, &csrf, &expires)
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
		s.mem.mu.Lock()
		delete(s.mem.m, string(sessionHash(cookie)))
		s.mem.mu.Unlock()
		return nil
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE id_sha256 = ?`, sessionHash(cookie))
	return err
}

// maxMemSessions bounds the sessions of a read-only store; beyond it the
// one closest to expiry goes.
const maxMemSessions = 1024

// create stores a session of a read-only store and forgets expired ones.
func (m *memSessions) create(id []byte, ms memSession, now int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	oldest := ""
	for k, v := range m.m {
		if v.expires < now {
			delete(m.m, k)
		} else if oldest == "" || v.expires < m.m[oldest].expires {
			oldest = k
		}
	}
	if len(m.m) >= maxMemSessions {
		delete(m.m, oldest)
	}
	m.m[string(id)] = ms
}

// memSession is Session for a read-only store: the session from memory,
// the account from the database.
func (s *Store) memSession(ctx context.Context, cookie string) (*Reviewer, string, error) {
	s.mem.mu.Lock()
	ms, ok := s.mem.m[string(sessionHash(cookie))]
	s.mem.mu.Unlock()
	if !ok || s.now().Unix() > ms.expires {
		return nil, "", nil
	}
	r := Reviewer{ID: ms.reviewerID}
	err := s.db.QueryRowContext(ctx, `SELECT name, is_admin FROM reviewers WHERE id = ?`, ms.reviewerID).Scan(&r.Name, &r.IsAdmin)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return &r, ms.csrf, nil
}
