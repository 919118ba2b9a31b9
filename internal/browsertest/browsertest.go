// Package browsertest starts headless Chromium for the end-to-end tests of
// the HTML report and the review app. It is imported only by tests.
//
// A test calls Chromium to find the browser: without one the test is
// skipped with a visible message, unless CHEXPERCEPT_BROWSER_TESTS=1 (set
// by CI, which installs Debian's chromium), in which case it fails.
//
// A test binary shares one browser: its tests open pages through a
// package-level Shared (closed by TestMain), each in a browser context of
// its own, so that Chromium starts once per package rather than once per
// test.
//
// CheckAxe runs axe-core, injected from the npm package's axe.min.js
// (AxeScript finds it), on a page and fails on every serious or critical
// violation: the accessibility check of the report and the apps' pages.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the browser's path, or skips (or fails under
// CHEXPERCEPT_BROWSER_TESTS=1) when there is none. CHEXPERCEPT_CHROMIUM
// names one; otherwise the headless shell (Debian's
// chromium-headless-shell: the same Blink engine without the browser's
// user interface) comes first, since it needs about a third less CPU
// than the full browser in headless mode for the same pages, then the
// full browser.
func Chromium(t testing.TB) string {
	t.Helper()
	if name := os.Getenv("CHEXPERCEPT_CHROMIUM"); name != "" {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("CHEXPERCEPT_CHROMIUM: %v", err)
		}
		return p
	}
	for _, name := range []string{"/usr/bin/chromium-headless-shell", "chromium-headless-shell", "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CHEXPERCEPT_BROWSER_TESTS") == "1" {
		t.Fatal("CHEXPERCEPT_BROWSER_TESTS=1 but no chromium found (apt-get install chromium-headless-shell)")
	}
	t.Skip("SKIP browser test: chromium not installed (apt-get install chromium-headless-shell; CHEXPERCEPT_BROWSER_TESTS=1 makes this a failure)")
	return ""
}

// Start launches headless Chromium (exe) with a fresh profile directory
// and the flags this machine's closed network needs, and returns its root
// context, bounded by timeout, with the function that stops it.
func Start(exe, profile string, width, height int, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := launch(exe, profile, width, height)
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	return ctx, func() { cancelT(); stop() }
}

// launch is Start without a bound: the root context of a new browser and
// the function that stops it.
func launch(exe, profile string, width, height int) (context.Context, context.CancelFunc) {
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
	return ctx, func() { cancelC(); cancelA() }
}

// Shared is one headless Chromium for every test of a test binary. The
// first test that opens a page starts it; each Open is a new browser
// context (its own cookies, storage and viewport), so tests sharing the
// browser, in parallel or not, see nothing of each other. Starting
// Chromium costs about half a CPU-second and a second of wall time, once
// per package instead of once per test. The zero value is ready to use;
// TestMain calls Close after the tests.
type Shared struct {
	mu      sync.Mutex
	root    context.Context
	stop    context.CancelFunc
	profile string
	err     error // the start's failure, reported to every test that asks
}

// Open returns a new cookie-isolated browser context with a viewport of
// width×height CSS pixels, bounded by timeout and closed when t ends. It
// skips t as Chromium does when there is no browser.
func (s *Shared) Open(t testing.TB, width, height int64, timeout time.Duration) context.Context {
	t.Helper()
	root, err := s.start(t)
	if err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	tab, closeTab := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	ctx, cancel := context.WithTimeout(tab, timeout)
	t.Cleanup(func() { cancel(); closeTab() })
	// The first action on a new context creates its target: done on tab,
	// so that the timeout's end fails the test's actions rather than
	// closing the target under them.
	if err := chromedp.Do(tab, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	return ctx
}

// Browser returns a function that opens a new browser context of the
// given viewport for t, each bounded by timeout (Open).
func (s *Shared) Browser(t testing.TB, timeout time.Duration) func(width, height int64) context.Context {
	t.Helper()
	Chromium(t) // skip now rather than at the first page
	return func(width, height int64) context.Context {
		t.Helper()
		return s.Open(t, width, height, timeout)
	}
}

func (s *Shared) start(t testing.TB) (context.Context, error) {
	t.Helper()
	exe := Chromium(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root != nil || s.err != nil {
		return s.root, s.err
	}
	if s.profile, s.err = os.MkdirTemp("", "chexpercept-chrome-"); s.err != nil {
		return nil, s.err
	}
	s.root, s.stop = launch(exe, s.profile, 1400, 1000)
	if s.err = chromedp.Do(s.root); s.err != nil { // starts the browser
		// Stopped once: a second stop of a browser that never started
		// would wait for it for ever.
		s.stop()
		s.root, s.stop = nil, nil
	}
	return s.root, s.err
}

// Main is a package's TestMain for tests that share s: it runs m's
// tests, stops s and removes each folder dirs point to (a package's
// shared fixtures, named by the first test that made them; "" is none),
// then exits with the tests' code. A failed clean-up is printed, not
// turned into a failure of tests that passed.
func (s *Shared) Main(m *testing.M, dirs ...*string) {
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	for _, d := range dirs {
		if *d == "" {
			continue
		}
		if err := os.RemoveAll(*d); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// Close stops the browser, if one was started, and removes its profile.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
		s.stop, s.root = nil, nil
	}
	if s.profile == "" {
		return nil
	}
	err := os.RemoveAll(s.profile)
	s.profile = ""
	return err
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
