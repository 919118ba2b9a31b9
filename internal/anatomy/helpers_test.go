package anatomy

import (
	"errors"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
)

// rect returns a w×h mask with the inclusive rectangle [x0,x1]×[y0,y1] on.
func rect(w, h, x0, y0, x1, y1 int) mask.Mask {
	m := mask.New(w, h)
	paint(m, x0, y0, x1, y1)
	return m
}

func paint(m mask.Mask, x0, y0, x1, y1 int) {
	for y := max(y0, 0); y <= min(y1, m.H-1); y++ {
		for x := max(x0, 0); x <= min(x1, m.W-1); x++ {
			m.Pix[y*m.W+x] = 1
		}
	}
}

// smallCfg is the default configuration with thresholds scaled for small
// test frames.
func smallCfg(minPx, radius, touch int) buildcfg.Config {
	c := buildcfg.Default()
	c.MinComponentPx, c.CleanupRadius, c.LungTouchPx = minPx, radius, touch
	return c
}

// wantReason checks that err is a *frame.CaseError with the given reason.
func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	var ce *frame.CaseError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T), want a *frame.CaseError %s", err, err, reason)
	}
	if ce.Reason != reason {
		t.Fatalf("reason %q (detail %q), want %q", ce.Reason, ce.Detail, reason)
	}
	if ce.Detail == "" {
		t.Fatalf("reason %q has no detail", ce.Reason)
	}
}

func newRegion(name string, m mask.Mask) Region {
	return Region{Name: name, Mask: m, Area: m.Count()}
}
