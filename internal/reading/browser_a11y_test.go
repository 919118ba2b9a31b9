package reading

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chexpercept/chexpercept/internal/browsertest"
	"github.com/chexpercept/chexpercept/internal/protocol"
)

// TestBrowserAccessibility: axe-core finds no serious or critical
// violation on the reading app's sign-in page, a turn, and the end page.
func TestBrowserAccessibility(t *testing.T) {
	t.Parallel()
	axe := browsertest.AxeScript(t)
	newCtx := browser(t)
	st := newStudy(t, testBench(t), protocol.OracleImplicit)
	ctx := newCtx(1400, 1000)
	if err := chromedp.Do(ctx, chromedp.Navigate(st.srv.URL+"/login"), chromedp.WaitVisible(chromedp.ID("token"))); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckAxe(t, ctx, axe, "sign-in")
	signInBrowser(t, ctx, st.srv.URL, st.creds["reader1"])
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("[data-submit]"))); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckAxe(t, ctx, axe, "a turn")
	// The rest of the study is answered over HTTP, in a session of the
	// same reader: the end page is the same however the answers came,
	// and answering in the browser is TestBrowserReading's.
	st.work(st.signIn("reader1"), false, -1)
	if err := chromedp.Do(ctx, chromedp.Navigate(st.srv.URL+"/read"), chromedp.WaitVisible(chromedp.CSS("[data-done]"))); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckAxe(t, ctx, axe, "done")
}
