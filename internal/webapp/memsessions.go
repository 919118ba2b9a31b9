package webapp

import "sync"

// maxMemSessions bounds MemSessions; beyond it the one closest to expiry
// goes.
const maxMemSessions = 1024

// MemSessions keeps sessions in memory, keyed by SessionHash of the
// cookie, for an app that must not write its database (a read-only
// review); they end with the process.
type MemSessions struct {
	mu sync.Mutex
	m  map[string]memSession
}

type memSession struct {
	accountID int64
	csrf      string
	expires   int64
}

// Create stores a session expiring at the Unix time expires and forgets
// expired ones (now is the current Unix time).
func (m *MemSessions) Create(cookie string, accountID int64, csrf string, expires, now int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]memSession{}
	}
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
	m.m[string(SessionHash(cookie))] = memSession{accountID, csrf, expires}
}

// Lookup returns the account id and CSRF token of a live session.
func (m *MemSessions) Lookup(cookie string, now int64) (accountID int64, csrf string, ok bool) {
	m.mu.Lock()
	ms, ok := m.m[string(SessionHash(cookie))]
	m.mu.Unlock()
	if !ok || now > ms.expires {
		return 0, "", false
	}
	return ms.accountID, ms.csrf, true
}

// End forgets a session.
func (m *MemSessions) End(cookie string) {
	m.mu.Lock()
	delete(m.m, string(SessionHash(cookie)))
	m.mu.Unlock()
}
