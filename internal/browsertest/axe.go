package browsertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// AxeEnv names the file axe.min.js of the axe-core npm package; without
// it AxeDefault is tried. CI installs the package there (.ci/run).
const AxeEnv = "CHEXPERCEPT_AXE_JS"

// AxeDefault is where .ci/run installs axe-core (npm install --prefix
// /opt/chexpercept-npm axe-core).
const AxeDefault = "/opt/chexpercept-npm/node_modules/axe-core/axe.min.js"

// maxAxeBytes bounds the script read (axe.min.js is about 0.6 MB).
const maxAxeBytes = 8 << 20

// AxeScript returns the text of axe.min.js, or skips (or fails under
// CHEXPERCEPT_BROWSER_TESTS=1) when it is not installed.
func AxeScript(t testing.TB) string {
	t.Helper()
	path := os.Getenv(AxeEnv)
	if path == "" {
		path = AxeDefault
	}
	f, err := os.Open(path)
	if err == nil {
		defer func() { _ = f.Close() }() // read-only
		var b strings.Builder
		buf := make([]byte, 64<<10)
		for b.Len() <= maxAxeBytes {
			n, rerr := f.Read(buf)
			b.Write(buf[:n])
			if rerr != nil {
				break
			}
		}
		if b.Len() > maxAxeBytes {
			t.Fatalf("%s: larger than %d bytes, not axe-core's axe.min.js", path, maxAxeBytes)
		}
		return b.String()
	}
	msg := fmt.Sprintf("axe-core not found at %s (npm install --prefix /opt/chexpercept-npm axe-core, or set %s to axe.min.js)", path, AxeEnv)
	if os.Getenv("CHEXPERCEPT_BROWSER_TESTS") == "1" {
		t.Fatal("CHEXPERCEPT_BROWSER_TESTS=1 but " + msg)
	}
	t.Skip("SKIP accessibility check: " + msg)
	return ""
}

// AxeViolation is one rule axe-core found broken, with the nodes that
// break it.
type AxeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

// Blocking reports whether a violation fails the check: serious or
// critical impact.
func (v AxeViolation) Blocking() bool { return v.Impact == "serious" || v.Impact == "critical" }

// String is one line: rule, impact, help, node count and the first nodes.
func (v AxeViolation) String() string {
	var where []string
	for i, n := range v.Nodes {
		if i == 3 {
			where = append(where, "…")
			break
		}
		where = append(where, fmt.Sprint(n.Target...))
	}
	return fmt.Sprintf("%s (%s): %s — %d node(s): %s", v.ID, v.Impact, v.Help, len(v.Nodes), strings.Join(where, ", "))
}

// RunAxe injects script (AxeScript) into the page of ctx, runs axe-core on
// the whole document and returns every violation. Injection goes through
// the DevTools protocol, so the page's Content-Security-Policy does not
// stand in its way.
func RunAxe(ctx context.Context, script string) ([]AxeViolation, error) {
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](script)); err != nil {
		return nil, fmt.Errorf("inject axe-core: %w", err)
	}
	vs, err := chromedp.Run(ctx, chromedp.Evaluate[[]AxeViolation](
		`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations)`, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("run axe-core: %w", err)
	}
	return vs, nil
}

// CheckAxe runs axe-core (RunAxe) on the page of ctx, named page in the
// messages, and fails t with one line per serious or critical violation;
// minor and moderate ones are logged.
func CheckAxe(t testing.TB, ctx context.Context, script, page string) {
	t.Helper()
	vs, err := RunAxe(ctx, script)
	if err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	for _, v := range vs {
		if v.Blocking() {
			t.Errorf("%s: %s", page, v)
		} else {
			t.Logf("%s: %s", page, v)
		}
	}
}
