package qagen

import (
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/source"
)

// Retry holds the QA parts built for the latest sequential retry that
// passed §9.4 and §9.5.
type Retry struct {
	Points   *PointPool
	Revision *RevisionChoice
}

// Finalizer returns the finalize hook of deform.Run: it builds the point
// pool (§9.4) then the revision options (§9.5) from the case RNG r, in
// that order, and stores them in out when both succeed. Its error (e.g.
// insufficient_revision_options) fails the retry.
func Finalizer(r *rng.RNG, ctx TokenContext, cfg buildcfg.Config, out *Retry) func(*deform.Attempt) error {
	return func(a *deform.Attempt) error {
		pool, err := NewPointPool(r, a, cfg)
		if err != nil {
			return err
		}
		rev, err := RevisionOptions(r, a, ctx, cfg)
		if err != nil {
			return err
		}
		out.Points, out.Revision = pool, rev
		return nil
	}
}

// LungsFrom picks the token lungs of §11 from a case's loaded lungs: the
// chex-role pair always, the PNG (cxas) pair only with a secondary source.
func LungsFrom(l *source.Lungs) render.Lungs {
	if l == nil {
		return render.Lungs{}
	}
	out := render.Lungs{ChexRight: l.ChexRight, ChexLeft: l.ChexLeft}
	if l.HasSecondary {
		out.CxasRight, out.CxasLeft, out.HasSecondary = l.CxasRight, l.CxasLeft, true
	}
	return out
}
