package build

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/anatomy"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/deform"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/qagen"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// inspect writes the inspect view (§12) for the walk's candidates chosen
// by spec: "all" (every processed candidate of the walk), "failed", or a
// comma-separated key_id list.
func (a *assembly) inspect(ctx context.Context, spec string) error {
	paths := map[string]benchmark.Path{}
	for _, inc := range a.records {
		paths[inc.it.c.KeyID()] = inc.path
	}
	want := map[string]bool{}
	if spec != "all" && spec != "failed" {
		for _, k := range strings.Split(spec, ",") {
			if k = strings.TrimSpace(k); k != "" {
				want[k] = true
			}
		}
	}
	found := map[string]bool{}
	for _, l := range a.lists {
		for _, it := range l.items {
			key := it.c.KeyID()
			var pick bool
			switch spec {
			case "all":
				pick = it.outcome != nil && it.state == stateDone && slices.Index(l.items, it) < l.walkLen()
			case "failed":
				pick = it.outcome != nil && !it.outcome.OK && slices.Index(l.items, it) < l.walkLen()
			default:
				pick = want[key]
			}
			if !pick || ctx.Err() != nil {
				continue
			}
			found[key] = true
			p := string(paths[key])
			if p == "" {
				p = "not included"
			}
			if err := inspectCase(ctx, a.e, it.c, a.opt.Out, p); err != nil {
				return global("inspect %s: %w", key, err)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !found[k] {
			fmt.Fprintf(a.opt.Stderr, "warning: --inspect: %s is not a candidate of this build\n", k)
		}
	}
	return ctx.Err()
}

// InspectOptions configure a stand-alone inspect run.
type InspectOptions struct {
	Dir    string // benchmark directory (with build_info.json)
	Key    string
	Source string // optional: manifest/candidates to find the case when work/ lacks it
	// Job is the command's job: its context stops the case's processing,
	// and it tracks the temporary files of the cache's atomic writes. Nil:
	// neither.
	Job *job.Job

	// testRename, when set (tests), renames the inspect folder instead of
	// os.Rename.
	testRename renameFunc
}

// maxMetaBytes bounds a build's own JSON files read back by inspect.
const maxMetaBytes = 256 << 20

// Inspect re-runs one case of a built benchmark from scratch with the
// configuration of its build_info.json and writes inspect/<key_id>/.
func Inspect(opt InspectOptions) (string, error) {
	// The key names folders under work/ and inspect/: it must be a key_id.
	// Its form is checked here; whether the lesion is one of the build's
	// is checked once the build's configuration is read.
	if !benchmark.KeyIDPattern.MatchString(opt.Key) {
		return "", fmt.Errorf("key_id %q does not match <lesion>_<stem>_(positive|negative)_<n>", textsafe.OneLine(opt.Key))
	}
	// inspect writes only into a build's directory, and replaces only an
	// inspect folder that holds nothing but inspect's files.
	if !outdir.IsRegular(filepath.Join(opt.Dir, filepath.FromSlash(markerRelPath))) &&
		!(outdir.IsRegular(filepath.Join(opt.Dir, infoJSON)) && outdir.IsRegular(filepath.Join(opt.Dir, sumsFile))) {
		return "", outdir.Refuse(opt.Dir, "", "%s is not a benchmark directory written by chexpercept build (no %s, nor %s and %s)", opt.Dir, markerRelPath, infoJSON, sumsFile)
	}
	if err := checkInspectFolder(opt.Dir, inspectDir+"/"+opt.Key); err != nil {
		return "", err
	}
	data, err := safefile.ReadFile(filepath.Join(opt.Dir, infoJSON), maxMetaBytes, safefile.NoFollow)
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(opt.Dir, infoJSON), safefile.Reason(err))
	}
	info, err := ojson.Parse(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", infoJSON, err)
	}
	cv := info.Get("config")
	if cv == nil || cv.Kind != ojson.KindObject {
		return "", fmt.Errorf("%s: no config object", infoJSON)
	}
	cfg := buildcfg.Default()
	if err := decodeConfig(ojson.MarshalCompact(cv), &cfg); err != nil {
		return "", fmt.Errorf("%s: config: %w", infoJSON, err)
	}
	if _, _, err := cfg.LesionSet().ParseKeyID(opt.Key); err != nil {
		return "", err
	}
	c, err := findCase(opt, cfg)
	if err != nil {
		return "", err
	}
	workDir := filepath.Join(opt.Dir, workDirName)
	loader, err := source.NewLoader(opt.Job, []*source.Case{c}, cfg, workDir, nil)
	if err != nil {
		return "", err
	}
	path := "not included"
	if d, err := safefile.ReadFile(filepath.Join(opt.Dir, casesJSONL), maxMetaBytes, safefile.NoFollow); err == nil {
		for _, ln := range bytes.Split(d, []byte("\n")) {
			if v, err := ojson.Parse(ln); err == nil && v.Get("key_id") != nil && v.Get("key_id").S == opt.Key {
				path = v.Get("path").S
			}
		}
	}
	e := &env{cfg: cfg, seed: cfg.Seed, loader: loader, rename: renamer(opt.testRename)}
	if err := inspectCase(opt.Job.Context(), e, c, opt.Dir, path); err != nil {
		return "", err
	}
	return filepath.Join(opt.Dir, inspectDir, opt.Key), nil
}

// findCase locates the candidate line: work/<key>/case.json, else the
// given source file.
func findCase(opt InspectOptions, cfg buildcfg.Config) (_ *source.Case, err error) {
	var line []byte
	if d, err := safefile.ReadFile(filepath.Join(opt.Dir, workDirName, opt.Key, caseJSON), maxMetaBytes, safefile.NoFollow); err == nil {
		if v, err := ojson.Parse(d); err == nil && v.Get("case") != nil {
			line = ojson.MarshalCompact(v.Get("case"))
		}
	}
	src := opt.Source
	if line != nil {
		tmp, terr := os.MkdirTemp("", "chexpercept-inspect-")
		if terr != nil {
			return nil, terr
		}
		defer func() {
			if rerr := os.RemoveAll(tmp); rerr != nil && err == nil {
				err = rerr // not left behind unsaid in the system's temporary folder
			}
		}()
		src = filepath.Join(tmp, "case.jsonl")
		if err := os.WriteFile(src, append(line, '\n'), 0o644); err != nil {
			return nil, err
		}
	}
	if src == "" {
		return nil, fmt.Errorf("%s %w in %s", opt.Key, ErrNoWorkState, filepath.Join(opt.Dir, workDirName))
	}
	all := cfg
	all.Lesions = cfg.LesionSet().Names()
	cases, _, err := source.ReadSource(src, all)
	if err != nil {
		return nil, err
	}
	for _, c := range cases {
		if c.KeyID() == opt.Key {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%s is not a case of %s", opt.Key, opt.Source)
}

// inspectCase re-runs c and writes its stages to <out>/inspect/<key_id>/
// through a staging folder. It never changes a build result. ctx ends
// its processing (the build's, or the inspect command's job's).
func inspectCase(ctx context.Context, e *env, c *source.Case, out, pathName string) error {
	dir := filepath.Join(out, inspectDir)
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		return foreign(out, inspectDir)
	}
	if err := checkInspectFolder(out, inspectDir+"/"+c.KeyID()); err != nil {
		return err
	}
	in := e.digests(c)
	if frame.IsTransient(in.err) {
		return in.err
	}
	o, st := e.processCase(ctx, c, in)
	if err := ctx.Err(); err != nil {
		return err // stopped: no view of a case cut short
	}
	if o.transient != nil {
		return o.transient
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Debris of an earlier inspect that failed or was killed: staging
	// folders are removed, an old folder set aside is put back.
	if err := cleanDirLeftovers(dir, e.rename); err != nil {
		return err
	}
	stage := filepath.Join(dir, ".staging-"+o.KeyID+"-"+randSuffix())
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return err
	}
	w := &inspectWriter{dir: stage}
	w.text("summary.txt", summaryText(e, c, in, o, st, pathName))
	if st.gray != nil && st.prep != nil {
		w.png("geometry.png", geometryImage(st))
		if st.regs != nil {
			w.png("regions.png", regionsSheet(st))
		}
	}
	if st.ov != nil {
		w.json("overlaps.json", anatomy.InspectJSON(st.ov))
	}
	if st.res != nil && st.res.Log != nil {
		if v, err := st.res.Log.JSON(); err == nil {
			w.json("deformation.json", v)
		} else {
			w.err = err
		}
	}
	if st.res != nil && st.res.Final != nil {
		w.steps(st)
		if o.OK && o.Record != nil && o.Record.Contour != nil {
			pts, opts, err := qagen.InspectImages(st.gray, o.Record, st.pool, st.res.Final.Masks, st.lungs, e.cfg)
			if err != nil {
				w.err = err
			} else {
				w.png("points.png", pts)
				w.png("revision_options.png", opts)
			}
		}
	}
	if w.err != nil {
		_ = os.RemoveAll(stage) // the write's error is the one to report; the next build removes a leftover staging folder
		return w.err
	}
	if err := replaceDir(e.rename, stage, filepath.Join(dir, o.KeyID)); err != nil {
		_ = os.RemoveAll(stage) // the staging folder is this call's own; the rename's error is the one to report
		return err
	}
	return nil
}

// steps writes one image per step of the final attempt and one per fake.
func (w *inspectWriter) steps(st *stages) {
	att := st.res.Final
	for _, s := range att.Steps() {
		prior := att.Masks[s.After]
		w.png("steps/"+s.Name+".png", stepImage(st.gray, prior, s.Mask, s.Points, s.Op, s.Center))
		for _, f := range s.Fakes {
			pts := s.FakePointsExpansion
			if f.Op == deform.Contraction {
				pts = s.FakePointsContraction
			}
			w.png("fakes/"+f.Name+".png", stepImage(st.gray, s.Mask, f.Mask, pts, f.Op, mask.Point{X: -1, Y: -1}))
		}
	}
}

type inspectWriter struct {
	dir string
	err error
}

func (w *inspectWriter) write(rel string, data []byte) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.err = err
		return
	}
	w.err = os.WriteFile(p, data, 0o644)
}

func (w *inspectWriter) text(rel, s string) { w.write(rel, []byte(s)) }
func (w *inspectWriter) json(rel string, v *ojson.Value) {
	w.write(rel, append(ojson.Marshal(v), '\n'))
}
func (w *inspectWriter) png(rel string, img image.Image) {
	if w.err != nil || img == nil {
		return
	}
	var b bytes.Buffer
	if err := render.EncodePNG(&b, img); err != nil {
		w.err = err
		return
	}
	w.write(rel, b.Bytes())
}

// summary is the text of summary.txt, one line per p call.
type summary struct{ strings.Builder }

func (b *summary) p(format string, args ...any) { fmt.Fprintf(&b.Builder, format+"\n", args...) }

// summaryText explains a case: its inputs, failure, geometry, deformation
// and how every answer was derived.
func summaryText(e *env, c *source.Case, in *inputs, o *Outcome, st *stages, pathName string) string {
	var b summary
	b.p("case %s", c.KeyID())
	b.p("lesion %s, label %s, path %s", c.Lesion, c.Label, pathName)
	b.p("case seed %s (build seed %d)", o.CaseSeed, e.seed)
	b.p("")
	b.inputs(c, in)
	b.p("")
	if !o.OK {
		b.p("FAILED: %s", o.Reason)
		b.p("  detail: %s", o.Detail)
		b.p("")
	}
	b.geometry(st)
	if st.res != nil {
		b.deformation(st.res)
	}
	if o.OK && o.Record != nil {
		b.answers(c, o.Record, st, pathName)
	}
	return b.String()
}

func (b *summary) inputs(c *source.Case, in *inputs) {
	b.p("inputs")
	b.p("  image %s", c.Image)
	b.p("    sha256 %s", in.imageSHA)
	for _, m := range c.LesionMasks {
		b.p("  lesion mask %s", m)
	}
	if c.Positive() {
		b.p("    canonical candidate mask sha256 %s", in.maskSHA)
	}
	if c.LungMasks != nil {
		b.p("  lung masks right %s, left %s", c.LungMasks.Right, c.LungMasks.Left)
	}
	if c.Chexmask != nil {
		b.p("  chexmask %s id %s size_check %t", c.Chexmask.CSV, c.Chexmask.ID, c.Chexmask.SizeCheck)
	}
	if c.Positive() {
		b.p("    lung source digest %s", in.lungSHA)
	}
	if len(c.LocationHints) > 0 {
		b.p("  location hints (informational): %s", strings.Join(c.LocationHints, "; "))
	}
}

// geometry lists the components, lungs, region geometry and overlaps.
func (b *summary) geometry(st *stages) {
	if st.prep != nil {
		b.p("components (optimal mask, %d px in total)", st.prep.Combined.Count())
		for i, m := range st.prep.Components {
			b.p("  %s: %d px", anatomy.ComponentName(i), m.Count())
		}
		b.p("lungs: raw right %d px, raw left %d px; augmented right %d px, left %d px",
			st.prep.RawRight.Count(), st.prep.RawLeft.Count(), st.prep.LungRight.Count(), st.prep.LungLeft.Count())
	}
	if st.regs != nil {
		b.p("")
		b.p("region geometry")
		for _, ln := range strings.Split(strings.TrimRight(st.regs.Describe(), "\n"), "\n") {
			b.p("  %s", ln)
		}
	}
	if st.ov != nil {
		b.p("")
		b.p("overlaps (has_overlap entries; see overlaps.json for all)")
		for _, cv := range st.ov {
			b.p("  %s: left lung %.4f%s, right lung %.4f%s", anatomy.ComponentName(cv.ID),
				cv.Left.Ratio, flag(cv.Left.HasOverlap, " (counts)"), cv.Right.Ratio, flag(cv.Right.HasOverlap, " (counts)"))
			for _, ov := range cv.LesionOverlap() {
				b.p("    %s [%s] ratio %.4f%s", ov.Name, ov.Key, ov.Ratio, flag(ov.Promoted, " promoted"))
			}
		}
	}
}

// deformation lists the catalogue and the steps of the sequential pass.
func (b *summary) deformation(res *deform.Result) {
	b.p("")
	b.p("deformation: possible anatomies [%s]", strings.Join(res.Possible, ", "))
	for _, ce := range res.Catalogue {
		b.p("  catalogue %s: attempt %d valid; anatomies:", deform.SID(ce.Component), ce.RetryCount)
		for _, an := range ce.Anatomies {
			b.p("    %s %s, widths %v, %d points, centre (%d, %d)", an.Op, an.Name, an.Widths, len(an.Points), an.Center.X, an.Center.Y)
		}
	}
	if res.Final == nil {
		return
	}
	b.p("  sequential pass: %d retries logged", len(res.Log.Sequential))
	for _, st := range res.Final.Steps() {
		b.p("    %s: corruption %s at %s, centre (%d, %d) → revision %s; fakes %d", st.Name, st.Op, st.Anatomy,
			st.Center.X, st.Center.Y, st.Op.Opposite(), len(st.Fakes))
	}
}

// answers derives every answer of a successful record.
func (b *summary) answers(c *source.Case, r *benchmark.Record, st *stages, pathName string) {
	b.p("")
	b.p("answers")
	b.p("  detection: %s (%d): label %s", r.Detection.Answer, r.Detection.AnswerIndex, c.Label)
	if r.Contour != nil {
		b.contour(r.Contour, st, pathName)
	}
	if at := st.attrs; at != nil {
		b.p("  %s", at.Distribution.Derivation)
		b.p("  %s", at.Location.Derivation)
		b.p("  %s", at.Severity.Derivation)
		b.p("  %s", at.Comparison.Derivation)
	} else if r.Contour != nil {
		b.p("  attributes: none (heart-type lesion)")
	}
}

// contour derives the contour evaluation, point and revision answers.
func (b *summary) contour(cq *benchmark.ContourQA, st *stages, pathName string) {
	ev := "RR → Yes (1)"
	if pathName == string(benchmark.RevisionFree) {
		ev = "RF → No (2)"
	}
	b.p("  contour evaluation: %s (the path is decided by candidate order and the RF share, §3)", ev)
	kinds := []string{}
	if st.pool != nil {
		kinds = st.pool.Kinds
	}
	var opts []string
	for k, po := range cq.Expansion.AnswerOptions {
		if po.Point == nil {
			continue
		}
		kind := ""
		if k < len(kinds) {
			kind = " " + kinds[k]
		}
		opts = append(opts, fmt.Sprintf("%d %s (%d, %d)%s", k+1, po.Color, po.Point[0], po.Point[1], kind))
	}
	b.p("  point options: %s", strings.Join(opts, "; "))
	b.p("  expansion: %s %v = centres of the steps whose revision is expansion (contraction corruptions)", cq.Expansion.Answer, cq.Expansion.AnswerIndex)
	b.p("  contraction: %s %v = centres of the steps whose revision is contraction (expansion corruptions)", cq.Contraction.Answer, cq.Contraction.AnswerIndex)
	b.p("  revision result: %s = the true combination %v; before masks %v", cq.RevisionResult.Answer, cq.TrueCombination, cq.RevisionBeforeMasks)
	for k, ro := range cq.RevisionResult.AnswerOptions {
		b.p("    option %d (%s): %v", k+1, ro.Type, ro.Masks)
	}
	if st.rev != nil {
		b.p("    distractors examined %d, rejected as pixel-identical %d", st.rev.Candidates, st.rev.Duplicates)
	}
}

func flag(b bool, s string) string {
	if b {
		return s
	}
	return ""
}

// Drawing functions for the inspect images (colours are not benchmark data).
type rgb struct{ r, g, b uint8 }

var (
	colBlue    = rgb{0, 0, 255}
	colGreen   = rgb{0, 255, 0}
	colYellow  = rgb{255, 255, 0}
	colMagenta = rgb{255, 0, 255}
	colOrange  = rgb{255, 128, 0}
	colRed     = rgb{255, 0, 0}
	colCyan    = rgb{0, 255, 255}
	colWhite   = rgb{255, 255, 255}
)

func setPx(img *image.RGBA, x, y int, c rgb) {
	if !(image.Point{X: x, Y: y}.In(img.Rect)) {
		return
	}
	i := img.PixOffset(x, y)
	img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.r, c.g, c.b, 255
}

func tint(img *image.RGBA, m mask.Mask, c rgb, alpha float64) {
	for y := 0; y < m.H; y++ {
		for x := 0; x < m.W; x++ {
			if m.Pix[y*m.W+x] == 0 {
				continue
			}
			i := img.PixOffset(x, y)
			img.Pix[i] = uint8(float64(img.Pix[i])*(1-alpha) + float64(c.r)*alpha + 0.5)
			img.Pix[i+1] = uint8(float64(img.Pix[i+1])*(1-alpha) + float64(c.g)*alpha + 0.5)
			img.Pix[i+2] = uint8(float64(img.Pix[i+2])*(1-alpha) + float64(c.b)*alpha + 0.5)
		}
	}
}

func outline(img *image.RGBA, m mask.Mask, c rgb) {
	if m.Count() == 0 {
		return
	}
	cm := mask.ContourMask(m)
	for y := 0; y < cm.H; y++ {
		for x := 0; x < cm.W; x++ {
			if cm.Pix[y*cm.W+x] != 0 {
				setPx(img, x, y, c)
			}
		}
	}
}

func geometryImage(st *stages) *image.RGBA {
	img := render.Gray2RGB(st.gray)
	p := st.prep
	if st.regs != nil {
		for _, g := range []anatomy.LungGeometry{st.regs.Right, st.regs.Left} {
			if len(g.Peripheral.Pix) > 0 {
				tint(img, g.Peripheral, colOrange, 0.35)
			}
			if len(g.CPA.Pix) > 0 {
				tint(img, g.CPA, colRed, 0.35)
			}
		}
	}
	outline(img, p.LungRight, colBlue)
	outline(img, p.LungLeft, colGreen)
	if st.regs != nil {
		for _, s := range []struct {
			g anatomy.LungGeometry
			m mask.Mask
		}{{st.regs.Right, p.LungRight}, {st.regs.Left, p.LungLeft}} {
			for _, row := range []int{s.g.B1, s.g.B2} {
				for x := 0; x < s.m.W && row >= 0 && row < s.m.H; x++ {
					if s.m.Pix[row*s.m.W+x] != 0 {
						setPx(img, x, row, colYellow)
					}
				}
			}
			for y := 0; y < s.m.H && s.g.MidX >= 0 && s.g.MidX < s.m.W; y++ {
				if s.m.Pix[y*s.m.W+s.g.MidX] != 0 {
					setPx(img, s.g.MidX, y, colMagenta)
				}
			}
		}
	}
	for i, m := range p.Components {
		outline(img, m, colCyan)
		if pts := mask.Contour(m); len(pts) > 0 {
			top := pts[0]
			for _, q := range pts {
				if q.Y < top.Y || (q.Y == top.Y && q.X < top.X) {
					top = q
				}
			}
			render.DrawLabel(img, top.X, max(0, top.Y-18), fmt.Sprintf("%d", i))
		}
	}
	render.DrawLabel(img, 4, 4, "right lung blue, left lung green, b1/b2 yellow, mid_x magenta, band orange, CPA red, components cyan")
	if st.regs != nil && st.regs.Erosion > 0 {
		lo, hi := st.regs.ErosionOffsets()
		render.DrawLabel(img, 4, 22, fmt.Sprintf("band core: lungs eroded by a %dx%d square, offsets %d..%d per axis (scikit-image), edges reflected",
			st.regs.Erosion, st.regs.Erosion, lo, hi))
	}
	return img
}

// regionsSheet tiles the zones and lung regions at 256×256 (4× down).
func regionsSheet(st *stages) *image.RGBA {
	regs := append([]anatomy.Region{}, st.regs.Zones...)
	regs = append(regs, st.regs.LungRegions...)
	const tile, cols = 256, 6
	rows := (len(regs) + cols - 1) / cols
	capH := 13*(1+len(st.ov)) + 6
	img := image.NewRGBA(image.Rect(0, 0, cols*tile, rows*(tile+capH)))
	for i := range img.Pix {
		img.Pix[i] = 0
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	lesion := st.prep.Combined
	for k, r := range regs {
		x0, y0 := (k%cols)*tile, (k/cols)*(tile+capH)
		for y := 0; y < tile; y++ {
			for x := 0; x < tile; x++ {
				g := uint8(st.gray.Pix[(y*4)*st.gray.Stride+x*4] / 3)
				c := rgb{g, g, g}
				idx := (y*4)*r.Mask.W + x*4
				in := r.Mask.Pix[idx] != 0
				les := lesion.Pix[idx] != 0
				switch {
				case in && les:
					c = colRed
				case in:
					c = rgb{150, 150, 150}
				case les:
					c = rgb{110, 40, 40}
				}
				setPx(img, x0+x, y0+y, c)
			}
		}
		render.DrawLabel(img, x0, y0+tile, textsafe.ClipWith(r.Name, 34, "~"))
		for ci, cv := range st.ov {
			var ov *anatomy.Overlap
			for j := range cv.Zones {
				if cv.Zones[j].Name == r.Name {
					ov = &cv.Zones[j]
				}
			}
			for j := range cv.LungRegions {
				if cv.LungRegions[j].Name == r.Name {
					ov = &cv.LungRegions[j]
				}
			}
			if ov == nil {
				continue
			}
			render.DrawLabel(img, x0, y0+tile+13*(ci+1), fmt.Sprintf("c%d %.4f %t%s", cv.ID, ov.Ratio, ov.HasOverlap, flag(ov.Promoted, " promoted")))
		}
	}
	return img
}

// stepImage is 2048×1024: left the before state with the points (green
// for expansion, red for contraction, 4 px discs) and the centre as a
// white cross; right the after state with added pixels yellow and removed
// pixels magenta.
func stepImage(gray *image.Gray, before, after mask.Mask, pts []mask.Point, op deform.Op, centre mask.Point) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, 2*gray.Rect.Dx(), gray.Rect.Dy()))
	left := render.Overlay(gray, before)
	right := render.Overlay(gray, after)
	added, removed := mask.AndNot(after, before), mask.AndNot(before, after)
	for y := 0; y < after.H; y++ {
		for x := 0; x < after.W; x++ {
			i := y*after.W + x
			if added.Pix[i] != 0 {
				setPx(right, x, y, colYellow)
			} else if removed.Pix[i] != 0 {
				setPx(right, x, y, colMagenta)
			}
		}
	}
	w := gray.Rect.Dx()
	for y := 0; y < gray.Rect.Dy(); y++ {
		copy(img.Pix[y*img.Stride:], left.Pix[y*left.Stride:y*left.Stride+4*w])
		copy(img.Pix[y*img.Stride+4*w:], right.Pix[y*right.Stride:y*right.Stride+4*w])
	}
	c := colGreen
	if op == deform.Contraction {
		c = colRed
	}
	for _, p := range pts {
		for dy := -4; dy <= 4; dy++ {
			for dx := -4; dx <= 4; dx++ {
				if dx*dx+dy*dy <= 16 {
					setPx(img, p.X+dx, p.Y+dy, c)
				}
			}
		}
	}
	if centre.X >= 0 {
		for d := -8; d <= 8; d++ {
			setPx(img, centre.X+d, centre.Y, colWhite)
			setPx(img, centre.X, centre.Y+d, colWhite)
		}
	}
	render.DrawLabel(img, 4, 4, fmt.Sprintf("before (%s points)", op))
	render.DrawLabel(img, w+4, 4, "after: added yellow, removed magenta")
	return img
}

// decodeConfig reads the resolved configuration recorded in build_info.json.
func decodeConfig(data []byte, cfg *buildcfg.Config) error {
	if err := ojson.Decode(data, cfg); err != nil {
		return err
	}
	return cfg.Validate()
}
