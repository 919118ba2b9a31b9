package review

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/reviewlog"
)

// TestReadOnlyServe serves a database opened by OpenReadOnly (SQLite's
// read-only mode, which holds for root too): the admin signs in and sees
// the progress view; reviewers cannot sign in; every change is refused
// with 403; and the database file is the same bytes afterwards.
func TestReadOnlyServe(t *testing.T) {
	a := newApp(t, 2, 1)
	r1 := a.signIn("r1")
	keys := a.queueOf("r1")
	if len(keys) == 0 {
		t.Fatal("no case in r1's queue")
	}
	key := keys[0]
	if resp := r1.decide(key, "accept", ""); resp.code != http.StatusOK {
		t.Fatalf("decide: %d %s", resp.code, resp.body)
	}
	path := a.store.Path
	a.store.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ro)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	b := &app{t: t, fx: a.fx, store: ro, srv: ts, tok: a.tok}

	if resp := b.anon().post("/login", url.Values{"token": {a.tok["r1"]}}, nil); resp.code != http.StatusForbidden ||
		!strings.Contains(resp.body, "reviewers cannot sign in") {
		t.Errorf("reviewer sign-in: %d %s", resp.code, resp.body)
	}
	admin := b.signIn("admin")
	page := admin.get("/admin")
	if page.code != http.StatusOK || !strings.Contains(page.body, `id="readonly-banner"`) ||
		strings.Contains(page.body, `id="lock-form"`) || !strings.Contains(page.body, "<b>1 / ") {
		t.Errorf("admin page: %d\n%s", page.code, page.body)
	}
	if cp := admin.get("/case/" + key); cp.code != http.StatusOK || strings.Contains(cp.body, `action="/admin/resolve"`) {
		t.Errorf("case page: %d, resolve form shown: %v", cp.code, strings.Contains(cp.body, `action="/admin/resolve"`))
	}
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{"/admin/lock", url.Values{"locked": {"1"}}},
		{"/admin/resolve", url.Values{"key": {key}, "decision": {"reject"}}},
		{"/api/decision", url.Values{"key": {key}, "decision": {"reject"}}},
	} {
		tc.form.Set("csrf", admin.csrf)
		if resp := admin.post(tc.path, tc.form, nil); resp.code != http.StatusForbidden || !strings.Contains(resp.body, "open read-only") {
			t.Errorf("POST %s: %d %s", tc.path, resp.code, resp.body)
		}
	}
	if resp := admin.post("/logout", url.Values{"csrf": {admin.csrf}}, nil); resp.code != http.StatusSeeOther {
		t.Errorf("logout: %d", resp.code)
	}
	if resp := admin.get("/admin"); resp.code != http.StatusUnauthorized {
		t.Errorf("after logout: %d", resp.code)
	}

	ctx := context.Background()
	c, _ := ro.CaseByKey(ctx, key)
	if _, err := ro.Decide(ctx, 1, c, reviewlog.DecisionReject, ""); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Decide: %v", err)
	}
	if _, err := ro.Resolve(ctx, c, reviewlog.DecisionReject, ""); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Resolve: %v", err)
	}
	if err := ro.SetLocked(ctx, true); !errors.Is(err, ErrReadOnly) {
		t.Errorf("SetLocked: %v", err)
	}
	if err := ro.ImportLines(ctx, nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("ImportLines: %v", err)
	}
	ts.Close()
	ro.Close()
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("the database file changed under read-only serving (%v)", err)
	}
}
