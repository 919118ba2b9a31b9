package eval

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// preflight asks every endpoint who serves the run's model, at once, and
// returns the one identity they share. It fails, before anything is
// written, when an endpoint is unreachable, refuses the key or does not
// serve the model, and when two endpoints are different servers (a run
// must reach one model). With NoPreflight nothing is asked: the identity
// is the sorted list of the run's endpoints (names, as the manifest
// records them), marked unverified.
func (r *runner) preflight(ctx context.Context, endpoints []string) (runmodel.Identity, error) {
	o := r.o
	if o.NoPreflight && o.Model.Backend != runmodel.BackendBaseline {
		fmt.Fprintln(o.Log, "notice: no preflight (--no-preflight): the server's identity is not verified; cached replies are keyed by the endpoint list")
		return runmodel.Unverified(endpoints), nil
	}
	eps := r.pool.eps
	ids := make([]runmodel.Identity, len(eps))
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		idf, ok := ep.client.(runmodel.Identifier)
		if !ok {
			return runmodel.Identity{}, fmt.Errorf("internal: the client of %s cannot run the preflight", ep.name)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = idf.Identify(ctx, o.Model.ModelID)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			if ctx.Err() != nil {
				return runmodel.Identity{}, ctx.Err()
			}
			return runmodel.Identity{}, &PreflightError{Endpoint: eps[i].name, Err: err}
		}
	}
	for i := 1; i < len(ids); i++ {
		if !ids[i].Same(ids[0]) {
			return runmodel.Identity{}, fmt.Errorf("preflight: %s and %s are different servers (%s vs %s); a run must reach one model, so give only endpoints of one server",
				eps[0].name, eps[i].name, ids[0], ids[i])
		}
	}
	if o.Model.Backend != runmodel.BackendBaseline {
		fmt.Fprintf(o.Log, "preflight: %s serve%s %s\n", endpointNames(eps), plural(len(eps)), ids[0])
	}
	return ids[0], nil
}

// PreflightError is a failed preflight of one endpoint; Err is the
// *provider.PreflightError.
type PreflightError struct {
	Endpoint string
	Err      error
}

func (e *PreflightError) Error() string {
	return fmt.Sprintf("preflight of %s: %v", e.Endpoint, e.Err)
}

func (e *PreflightError) Unwrap() error { return e.Err }

func endpointNames(eps []*endpoint) string {
	if len(eps) == 1 {
		return eps[0].name
	}
	return fmt.Sprintf("%d endpoints", len(eps))
}

func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

// ErrOtherServer is the refusal to resume a run against another server
// than the one that answered it.
var ErrOtherServer = errors.New("refusing to mix answers of two servers")

// sameServer refuses to resume a run against a server of another
// identity than the one its manifest records (ErrOtherServer): its
// answers would mix two models. A manifest without an identity (written by an earlier version)
// is refused too, since nothing tells whose answers it holds, unless the
// run is an in-process baseline, whose policy and seed the manifest's
// model already records.
func sameServer(runDir string, old, cur *results.Manifest) error {
	if cur.ServerIdentity == nil {
		return nil
	}
	switch {
	case old.ServerIdentity == nil && cur.ServerIdentity.Source == runmodel.IdentityInProcess:
		return nil
	case old.ServerIdentity == nil:
		return fmt.Errorf("run directory %s was started without a recorded server identity (by an earlier chexpercept), so resuming it could mix answers of two servers; finish it with that version or use another results folder", runDir)
	case !old.ServerIdentity.Same(*cur.ServerIdentity):
		return fmt.Errorf("run directory %s was started against server %s, but this server is %s; %w: point the endpoint at the first server, or use another results folder",
			runDir, *old.ServerIdentity, *cur.ServerIdentity, ErrOtherServer)
	}
	return nil
}
