package build

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/qagen"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// ReasonInternal is the §14 reason of a recovered panic or an unexpected
// (non-CaseError) failure.
const ReasonInternal = "internal_error"

// env is what every case of a build shares.
type env struct {
	cfg    buildcfg.Config
	seed   uint64
	loader *source.Loader
	stderr io.Writer // stack traces of recovered panics (nil: os.Stderr)
	// hook, when set (tests), runs first inside the recover boundary.
	hook func(c *source.Case)
	// rename renames the build's folders (os.Rename but in tests).
	rename renameFunc
}

// inputs are a candidate's digests (§4, §13), computed before processing.
// An error digest stands for an unreadable input: it still enters the
// fingerprint (so a later fix invalidates the cached failure) and the case
// fails with the recorded reason when processed.
type inputs struct {
	imageSHA  string
	maskSHA   string // positives only
	lungSHA   string // positives only
	candidate mask.Mask
	err       error // first input failure (a *frame.CaseError)
}

// digests reads the inputs of c that the review and the fingerprint need.
func (e *env) digests(c *source.Case) *inputs {
	in := &inputs{}
	var err error
	if in.imageSHA, err = source.ImageSHA256(c); err != nil {
		in.imageSHA, in.err = "error:"+errReason(err), err
	}
	if !c.Positive() {
		return in
	}
	if in.candidate, err = e.loader.CandidateMask(c); err != nil {
		in.maskSHA = "error:" + errReason(err)
		if in.err == nil {
			in.err = err
		}
	} else {
		in.maskSHA = source.MaskSHA256(in.candidate)
	}
	if in.lungSHA, err = e.loader.LungSourceSHA256(c); err != nil {
		in.lungSHA = "error:" + errReason(err)
		if in.err == nil {
			in.err = err
		}
	}
	return in
}

func errReason(err error) string {
	var ce *frame.CaseError
	if errors.As(err, &ce) {
		return ce.Error()
	}
	return err.Error()
}

// caseLabel is the case RNG label of §13.
func caseLabel(seed uint64, keyID string) string {
	return fmt.Sprintf("chexpercept/case/%d/%s", seed, keyID)
}

// Outcome is the result of processing one candidate.
type Outcome struct {
	KeyID    string
	Positive bool
	OK       bool
	Reason   string // failures: §14 reason
	Detail   string
	CaseSeed string // hex digest of the case RNG seed

	ImageSHA, MaskSHA string

	// Successes only.
	Record      *benchmark.Record // positives in RR form (RF is derived at assembly)
	Deformation *ojson.Value      // deformation_results.json entry (positives)
	MaskNames   []string          // masks/<key_id>/<name>.png, in creation order
	TokenNames  []string          // lung token masks the revision options use

	// caseLine is the candidate's line with absolute paths, kept in
	// case.json so that inspect can re-run the case.
	caseLine *ojson.Value

	// transient is set when the case failed for a reason outside its
	// inputs (frame.IsTransient): the build stops instead of recording it.
	transient error

	// masks holds MaskNames and TokenNames in memory until the work state
	// is written; nil afterwards and for loaded outcomes.
	masks map[string]mask.Mask
}

// stages are the intermediate results of one case, in pipeline order.
// processCase fills them as it goes and the inspect view reads them; a
// stage that was not reached (or whose step failed) is left nil, except
// prep, regs and res, which keep what their step returned with its error.
type stages struct {
	gray  *image.Gray
	lungs render.Lungs // the token lungs of §11
	prep  *anatomy.Prepared
	regs  *anatomy.Regions
	ov    []anatomy.ComponentOverlap
	res   *deform.Result
	pool  *qagen.PointPool
	rev   *qagen.RevisionChoice
	attrs *anatomy.AttributeAnswers
}

// processCase runs the per-case pipeline inside a recover boundary and
// returns the outcome with the intermediate stages. The case RNG is drawn
// from in the order of §13: catalogue, sequential retries (each finalised
// by §9.4 then §9.5), then §10 location and severity.
func (e *env) processCase(ctx context.Context, c *source.Case, in *inputs) (out *Outcome, st *stages) {
	out = &Outcome{KeyID: c.KeyID(), Positive: c.Positive(), ImageSHA: in.imageSHA, MaskSHA: in.maskSHA}
	st = &stages{}
	line := source.CaseJSON(c, "")
	defer func() { out.caseLine = line }()
	r := rng.New(caseLabel(e.seed, out.KeyID))
	out.CaseSeed = r.DigestHex()
	defer e.recoverCase(out)
	if e.hook != nil {
		e.hook(c)
	}
	if err := ctx.Err(); err != nil {
		return out.fail(err), st
	}
	if in.err != nil {
		return out.fail(in.err), st
	}
	var err error
	if st.gray, err = frame.LoadGray(c.Image); err != nil {
		return out.fail(err), st
	}
	qc := qagen.Case{KeyID: out.KeyID, PairID: c.CaseID, Lesion: c.Lesion, DicomID: c.ImageID}
	if !c.Positive() {
		rec, err := qagen.AssembleRecord(qc, nil, e.cfg)
		if err != nil {
			return out.fail(err), st
		}
		out.OK, out.Record = true, rec
		return out, st
	}
	if err := e.positiveStages(c, in, r, st); err != nil {
		return out.fail(err), st
	}
	qc.Positive = true
	rec, err := qagen.AssembleRecord(qc, &qagen.QA{Points: st.pool, Revision: st.rev, Attributes: st.attrs}, e.cfg)
	if err != nil {
		return out.fail(err), st
	}
	if err := out.keepMasks(st, rec, e.cfg); err != nil {
		return out.fail(err), st
	}
	out.Deformation = st.res.DeformationResultsJSON(anatomy.GeometricalMaskInfos(st.ov))
	out.OK, out.Record = true, rec
	return out, st
}

// recoverCase turns a panic in a case into an internal_error outcome, with
// the stack trace on stderr. It must be deferred directly.
func (e *env) recoverCase(out *Outcome) {
	p := recover()
	if p == nil {
		return
	}
	w := e.stderr
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "chexpercept build: panic in case %s: %v\n%s\n", out.KeyID, p, debug.Stack())
	*out = Outcome{KeyID: out.KeyID, Positive: out.Positive, CaseSeed: out.CaseSeed, ImageSHA: out.ImageSHA, MaskSHA: out.MaskSHA,
		Reason: ReasonInternal, Detail: textsafe.Squash(fmt.Sprint(p))}
}

// fail records err as the outcome's §14 reason: a *frame.CaseError keeps
// its reason, anything else is an internal error; a transient error is
// also kept apart, for the build to stop on.
func (out *Outcome) fail(err error) *Outcome {
	var ce *frame.CaseError
	if frame.IsTransient(err) {
		out.transient = err
	}
	if errors.As(err, &ce) {
		out.Reason, out.Detail = ce.Reason, textsafe.Squash(ce.Detail)
	} else {
		out.Reason, out.Detail = ReasonInternal, textsafe.Squash(err.Error())
	}
	out.OK = false
	return out
}

// positiveStages runs the geometry (§5–§7), the deformation with its
// finalisation (§8, §9.4, §9.5) and the attributes (§10) of a positive
// case into st, drawing from r in that order.
func (e *env) positiveStages(c *source.Case, in *inputs, r *rng.RNG, st *stages) error {
	cfg := e.cfg
	heart := cfg.IsHeartLesion(c.Lesion)
	lungs, err := e.loader.LoadLungs(c)
	if err != nil {
		return err
	}
	st.lungs = qagen.LungsFrom(lungs)
	if st.prep, err = anatomy.Prepare(in.candidate, lungs.Right, lungs.Left, heart, cfg); err != nil {
		return err
	}
	if st.regs, err = anatomy.BuildRegions(st.prep, heart); err != nil {
		return err
	}
	st.ov = anatomy.Overlaps(st.prep, st.regs, heart, cfg)
	if err := e.deformStage(r, st, heart); err != nil {
		return err
	}
	if heart {
		return nil
	}
	attrs, err := anatomy.Attributes(r, st.ov, st.prep, cfg)
	if err != nil {
		return err
	}
	st.attrs = attrs
	return nil
}

// deformStage runs the catalogue and sequential passes; each sequential
// retry is finalised by the point pool (§9.4) then the revision options
// (§9.5), and the last retry that passed both provides st.pool and st.rev.
func (e *env) deformStage(r *rng.RNG, st *stages, heart bool) error {
	cfg := e.cfg
	tctx := qagen.TokenContext{HeartType: heart, Overlaps: st.ov, Lungs: st.lungs}
	var qa qagen.Retry
	res, err := deform.Run(r, &deform.Input{Gray: st.gray, Prep: st.prep, Regions: st.regs, Overlaps: st.ov, HeartType: heart, Cfg: cfg},
		qagen.Finalizer(r, tctx, cfg, &qa))
	st.res = res
	if err != nil {
		return err
	}
	st.pool, st.rev = qa.Points, qa.Revision
	return nil
}

// keepMasks holds the masks of a successful positive in memory until the
// work state is written. masks/<key_id>/ gets the optimal components and
// their union, the catalogue masks, then every named mask of the final
// attempt; the lung tokens are not benchmark masks, but the option images
// need them.
func (out *Outcome) keepMasks(st *stages, rec *benchmark.Record, cfg buildcfg.Config) error {
	out.masks = map[string]mask.Mask{}
	add := func(name string, m mask.Mask) {
		if _, ok := out.masks[name]; ok {
			return
		}
		out.masks[name] = m
		out.MaskNames = append(out.MaskNames, name)
	}
	for i, m := range st.prep.Components {
		add(deform.OptimalName(i), m)
	}
	add("optimal_combined_mask", st.prep.Combined)
	for _, ce := range st.res.Catalogue {
		add(deform.SID(ce.Component), ce.Mask)
	}
	for _, n := range st.res.Final.Names {
		add(n, st.res.Final.Masks[n])
	}
	tok := qagen.RecordTokens(rec, st.res.Final.Masks, st.lungs, cfg)
	for _, o := range rec.Contour.RevisionResult.AnswerOptions {
		for _, n := range o.Masks {
			if !strings.Contains(n, "_lung_") || !render.IsToken(n) || slices.Contains(out.TokenNames, n) {
				continue
			}
			m, err := tok.Mask(n)
			if err != nil {
				return err
			}
			out.TokenNames = append(out.TokenNames, n)
			out.masks[n] = m
		}
	}
	return nil
}

// questionCount is the number of questions of a record on its path (LF
// 1; RF 6 and RR 9, or 2 and 5 for heart-type records). The record's own
// data says whether it is heart-type, so heart_lesions is honoured.
func questionCount(rec *benchmark.Record, path benchmark.Path) int {
	return benchmark.QuestionsFor(path, rec.IsHeartType())
}
