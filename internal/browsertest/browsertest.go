// Package browsertest starts headless Chromium for the end-to-end tests of
// the HTML report and the review app. It is imported only by tests.
//
// A test calls Chromium to find the browser: without one the test is
// skipped with a visible message, unless CHEXPERCEPT_BROWSER_TESTS=1 (set
// by CI, which installs Debian's chromium), in which case it fails.
//
// CheckAxe runs axe-core, injected from the npm package's axe.min.js
// (AxeScript finds it), on a page and fails on every serious or critical
// violation: the accessibility check of the report and the apps' pages.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the browser's path, or skips (or fails under
// CHEXPERCEPT_BROWSER_TESTS=1) when there is none.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CHEXPERCEPT_BROWSER_TESTS") == "1" {
		t.Fatal("CHEXPERCEPT_BROWSER_TESTS=1 but no chromium found (apt-get install chromium)")
	}
	t.Skip("SKIP browser test: chromium not installed (apt-get install chromium; CHEXPERCEPT_BROWSER_TESTS=1 makes this a failure)")
	return ""
}

// Start launches headless Chromium (exe) with a fresh profile directory
// and the flags this machine's closed network needs, and returns its root
// context, bounded by timeout, with the function that stops it.
func Start(exe, profile string, width, height int, timeout time.Duration) (context.Context, context.CancelFunc) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	return ctx, func() { cancelT(); cancelC(); cancelA() }
}

// Browser starts headless Chromium (skipping as Chromium does) with a
// fresh profile, stopped when t ends, and returns a function that opens a
// new cookie-isolated browser context (one user) of the given viewport.
func Browser(t testing.TB, timeout time.Duration) func(width, height int64) context.Context {
	t.Helper()
	exe := Chromium(t)
	root, stop := Start(exe, filepath.Join(t.TempDir(), "chrome-profile"), 1400, 1000, timeout)
	t.Cleanup(stop)
	if err := chromedp.Do(root); err != nil { // starts the browser
		t.Fatal(err)
	}
	return func(width, height int64) context.Context {
		ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
			t.Errorf("open a browser context: %v", err) // the next step on ctx fails too
		}
		return ctx
	}
}

// Screenshot saves the page of ctx as name.png in $CHEXPERCEPT_SCREENSHOTS
// when that is set (to look at the pages a test saw). A screenshot is an
// aid to whoever debugs a test: one that cannot be taken or saved fails
// nothing.
func Screenshot(ctx context.Context, name string) {
	dir := os.Getenv("CHEXPERCEPT_SCREENSHOTS")
	if dir == "" {
		return
	}
	if b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		_ = os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644)
	}
}

// SignIn signs in through an app's sign-in page (#token, #login-button)
// and waits for the page it leads to, which names the account (#who).
func SignIn(t testing.TB, ctx context.Context, base, token string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("login-button")),
		chromedp.WaitVisible(chromedp.ID("who")),
	); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
}
