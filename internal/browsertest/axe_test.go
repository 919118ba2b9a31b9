package browsertest

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAxe: the harness finds a serious violation (grey on white, an image
// without text) on a bad page and none on a clean one.
func TestAxe(t *testing.T) {
	exe := Chromium(t)
	script := AxeScript(t)
	pages := map[string]string{
		"/bad":  `<!doctype html><html lang="en"><head><title>bad</title></head><body><main><h1>Bad</h1><p style="color:#bbb;background:#fff">faint text</p><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></main></body></html>`,
		"/good": `<!doctype html><html lang="en"><head><title>good</title></head><body><main><h1>Good</h1><p>plain text</p></main></body></html>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(pages[r.URL.Path]))
	}))
	defer srv.Close()
	ctx, stop := Start(exe, filepath.Join(t.TempDir(), "profile"), 800, 600, 60*time.Second)
	defer stop()
	tests := []struct {
		path string
		want []string // blocking rule ids
	}{
		{"/bad", []string{"color-contrast", "image-alt"}},
		{"/good", nil},
	}
	for _, tc := range tests {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+tc.path)); err != nil {
			t.Fatal(err)
		}
		vs, err := RunAxe(ctx, script)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, v := range vs {
			if v.Blocking() {
				got[v.ID] = true
			}
		}
		for _, id := range tc.want {
			if !got[id] {
				t.Errorf("%s: axe did not report %s (got %v)", tc.path, id, vs)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: blocking violations %v, want %v", tc.path, got, tc.want)
		}
	}
}
