package reading

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chexpercept/chexpercept/internal/protocol"
)

// TestManyReadersAtOnce: 60 readers signed in from one address answer at
// the same time through the real HTTP flow (page, images, answer): no
// request is refused or fails, every reader finishes, and every
// acknowledged answer is stored once.
func TestManyReadersAtOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("60 concurrent readers")
	}
	const readers, maxTurns = 60, 500
	bench := testBench(t)
	db := filepath.Join(t.TempDir(), "reading.sqlite")
	creds, _, err := Init(context.Background(), InitOptions{Bench: bench, DB: db, Readers: readers, Seed: 3, Oracle: protocol.OracleImplicit})
	if err != nil {
		t.Fatal(err)
	}
	st := &study{t: t, bench: bench, db: db, creds: map[string]string{}}
	st.start()
	var mu sync.Mutex
	statuses := map[string]int{} // "METHOD path-kind status" → count
	count := func(method, path string, code int) {
		kind := path
		if strings.HasPrefix(path, "/image/") {
			kind = "/image/…"
		}
		mu.Lock()
		statuses[fmt.Sprintf("%s %s %d", method, kind, code)]++
		mu.Unlock()
	}
	var wg sync.WaitGroup
	finished := 0
	for _, c := range creds {
		if c.Name == AdminName {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			jar, _ := cookiejar.New(nil)
			hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			do := func(method, path string, form url.Values) (int, string) {
				var body io.Reader
				if form != nil {
					body = strings.NewReader(form.Encode())
				}
				req, _ := http.NewRequest(method, st.srv.URL+path, body)
				if form != nil {
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				resp, err := hc.Do(req)
				if err != nil {
					count(method, path, -1)
					return -1, ""
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				count(method, path, resp.StatusCode)
				return resp.StatusCode, string(b)
			}
			if code, _ := do("POST", "/login", url.Values{"token": {c.Token}}); code != http.StatusSeeOther {
				return
			}
			for range maxTurns {
				code, page := do("GET", "/read", nil)
				if code != http.StatusOK {
					return
				}
				if strings.Contains(page, "data-done") {
					mu.Lock()
					finished++
					mu.Unlock()
					return
				}
				f := url.Values{"option": {"1"}}
				for _, m := range hiddenRE.FindAllStringSubmatch(page, -1) {
					f.Set(m[1], m[2])
				}
				for _, m := range imageRE.FindAllStringSubmatch(page, -1) {
					do("GET", m[1], nil)
				}
				if code, _ := do("POST", "/answer", f); code != http.StatusSeeOther {
					return
				}
			}
		}()
	}
	wg.Wait()
	for k, n := range statuses {
		f := strings.Fields(k)
		if code, _ := strconv.Atoi(f[2]); code < 0 || code >= 400 && !(f[1] == "/read" && code == 200) {
			t.Errorf("%d × %s", n, k)
		}
	}
	if finished != readers {
		t.Errorf("%d of %d readers finished", finished, readers)
	}
	var n int
	acked := statuses["POST /answer 303"]
	if err := st.store.db.QueryRowContext(context.Background(), `SELECT count(*) FROM turns WHERE answer IS NOT NULL`).Scan(&n); err != nil || n != acked {
		t.Errorf("%d answers stored (%v), %d acknowledged", n, err, acked)
	}
}
