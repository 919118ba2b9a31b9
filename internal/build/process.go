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

	// masks holds MaskNames and TokenNames in memory until the work state
	// is written; nil afterwards and for loaded outcomes.
	masks map[string]mask.Mask
}

// trace keeps the intermediate state of a case for the inspect view.
type trace struct {
	gray  *image.Gray
	lungs *source.Lungs
	cand  mask.Mask
	prep  *anatomy.Prepared
	regs  *anatomy.Regions
	ov    []anatomy.ComponentOverlap
	res   *deform.Result
	pool  *qagen.PointPool
	rev   *qagen.RevisionChoice
	attrs *anatomy.AttributeAnswers
}

// processCase runs the per-case pipeline inside a recover boundary. The
// case RNG is drawn from in the order of §13: catalogue, sequential retries
// (each finalised by §9.4 then §9.5), then §10 location and severity.
func (e *env) processCase(ctx context.Context, c *source.Case, in *inputs, tr *trace) (out *Outcome) {
	out = &Outcome{KeyID: c.KeyID(), Positive: c.Positive(), ImageSHA: in.imageSHA, MaskSHA: in.maskSHA}
	line := source.CaseJSON(c, "")
	defer func() { out.caseLine = line }()
	r := rng.New(caseLabel(e.seed, out.KeyID))
	out.CaseSeed = r.DigestHex()
	defer func() {
		if p := recover(); p != nil {
			w := e.stderr
			if w == nil {
				w = os.Stderr
			}
			fmt.Fprintf(w, "chexpercept build: panic in case %s: %v\n%s\n", out.KeyID, p, debug.Stack())
			*out = Outcome{KeyID: out.KeyID, Positive: out.Positive, CaseSeed: out.CaseSeed, ImageSHA: out.ImageSHA, MaskSHA: out.MaskSHA,
				Reason: ReasonInternal, Detail: oneLine(fmt.Sprint(p))}
		}
	}()
	fail := func(err error) *Outcome {
		var ce *frame.CaseError
		if errors.As(err, &ce) {
			out.Reason, out.Detail = ce.Reason, oneLine(ce.Detail)
		} else {
			out.Reason, out.Detail = ReasonInternal, oneLine(err.Error())
		}
		out.OK = false
		return out
	}
	if e.hook != nil {
		e.hook(c)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if in.err != nil {
		return fail(in.err)
	}
	gray, err := frame.LoadGray(c.Image)
	if err != nil {
		return fail(err)
	}
	if tr != nil {
		tr.gray = gray
	}
	cfg := e.cfg
	if !c.Positive() {
		rec, err := qagen.AssembleRecord(qagen.Case{KeyID: out.KeyID, PairID: c.CaseID, Lesion: c.Lesion, DicomID: c.ImageID}, nil, cfg)
		if err != nil {
			return fail(err)
		}
		out.OK, out.Record = true, rec
		return out
	}
	heart := cfg.IsHeartLesion(c.Lesion)
	lungs, err := e.loader.LoadLungs(c)
	if err != nil {
		return fail(err)
	}
	prep, err := anatomy.Prepare(in.candidate, lungs.Right, lungs.Left, heart, cfg)
	if tr != nil {
		tr.lungs, tr.cand, tr.prep = lungs, in.candidate, prep
	}
	if err != nil {
		return fail(err)
	}
	regs, err := anatomy.BuildRegions(prep, heart)
	if tr != nil {
		tr.regs = regs
	}
	if err != nil {
		return fail(err)
	}
	ov := anatomy.Overlaps(prep, regs, heart, cfg)
	if tr != nil {
		tr.ov = ov
	}
	rl := render.Lungs{ChexRight: lungs.ChexRight, ChexLeft: lungs.ChexLeft, CxasRight: lungs.CxasRight, CxasLeft: lungs.CxasLeft, HasSecondary: lungs.HasSecondary}
	tctx := qagen.TokenContext{HeartType: heart, Overlaps: ov, Lungs: rl}
	var pool *qagen.PointPool
	var rev *qagen.RevisionChoice
	res, err := deform.Run(r, &deform.Input{Gray: gray, Prep: prep, Regions: regs, Overlaps: ov, HeartType: heart, Cfg: cfg},
		func(a *deform.Attempt) error {
			p, err := qagen.NewPointPool(r, a, cfg)
			if err != nil {
				return err
			}
			rv, err := qagen.RevisionOptions(r, a, tctx, cfg)
			if err != nil {
				return err
			}
			pool, rev = p, rv
			return nil
		})
	if tr != nil {
		tr.res = res
	}
	if err != nil {
		return fail(err)
	}
	if tr != nil {
		tr.pool, tr.rev = pool, rev
	}
	var attrs *anatomy.AttributeAnswers
	if !heart {
		if attrs, err = anatomy.Attributes(r, ov, prep, cfg); err != nil {
			return fail(err)
		}
		if tr != nil {
			tr.attrs = attrs
		}
	}
	rec, err := qagen.AssembleRecord(qagen.Case{KeyID: out.KeyID, PairID: c.CaseID, Lesion: c.Lesion, DicomID: c.ImageID, Positive: true},
		&qagen.QA{Points: pool, Revision: rev, Attributes: attrs}, cfg)
	if err != nil {
		return fail(err)
	}
	// masks/<key_id>/: the optimal components and their union, the
	// catalogue masks, then every named mask of the final attempt.
	out.masks = map[string]mask.Mask{}
	add := func(name string, m mask.Mask) {
		if _, ok := out.masks[name]; ok {
			return
		}
		out.masks[name] = m
		out.MaskNames = append(out.MaskNames, name)
	}
	for i, m := range prep.Components {
		add(deform.OptimalName(i), m)
	}
	add("optimal_combined_mask", prep.Combined)
	for _, ce := range res.Catalogue {
		add(deform.SID(ce.Component), ce.Mask)
	}
	for _, n := range res.Final.Names {
		add(n, res.Final.Masks[n])
	}
	// Lung tokens are not benchmark masks, but the option images need them.
	tok := qagen.RecordTokens(rec, res.Final.Masks, rl, cfg)
	for _, o := range rec.Contour.RevisionResult.AnswerOptions {
		for _, n := range o.Masks {
			if !strings.Contains(n, "_lung_") || !render.IsToken(n) || slices.Contains(out.TokenNames, n) {
				continue
			}
			m, err := tok.Mask(n)
			if err != nil {
				return fail(err)
			}
			out.TokenNames = append(out.TokenNames, n)
			out.masks[n] = m
		}
	}
	out.Deformation = res.DeformationResultsJSON(anatomy.GeometricalMaskInfos(ov))
	out.OK, out.Record = true, rec
	return out
}

// oneLine keeps a detail on one line (CSV and terminal friendly).
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// questionCount is the number of questions of a record on its path (LF
// 1; RF 6 and RR 9, or 2 and 5 for heart-type records). The record's own
// data says whether it is heart-type, so heart_lesions is honoured.
func questionCount(rec *benchmark.Record, path benchmark.Path) int {
	return benchmark.QuestionsFor(path, rec.IsHeartType())
}
