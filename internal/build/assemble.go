package build

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"image"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/phantom"
	"github.com/chexpercept/chexpercept/internal/qagen"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/version"
)

// Output names (§11).
const (
	imagesDir      = "chexpercept"
	masksDir       = "masks"
	inspectDir     = "inspect"
	deformJSON     = "deformation_results.json"
	casesJSONL     = "cases.jsonl"
	reportJSON     = "build_report.json"
	skippedCSV     = "skipped.csv"
	infoJSON       = "build_info.json"
	timingJSON     = "build_timing.json"
	sumsFile       = "SHA256SUMS"
	benchmarkJSON  = benchmark.JSONName
	lesionsJSON    = benchmark.LesionsFileName
	notAcceptedPfx = "not_accepted:"
)

// included is one case of the benchmark.
type included struct {
	l    *list
	it   *item
	path benchmark.Path
	rec  *benchmark.Record
}

// lesionStats are the 1-worker-walk counts of one lesion (build_report).
type lesionStats struct {
	lesion                       string
	seenNeg, seenPos             int
	notAccepted                  map[string]int // missing, rejected, disputed, stale
	failed                       map[string]int
	lf, rf, rr                   int
	targetLF, targetRF, targetRR int
}

type assembly struct {
	opt        Options
	cfg        buildcfg.Config
	lists      []*list
	workDir    string
	loader     *source.Loader
	e          *env
	sampleSeed *uint64
	sourcePath string
	cases      []*source.Case
	own        *ownership // what the build may overwrite or remove in opt.Out
	ahead      *renderAhead

	records  []*included
	stats    []*lesionStats
	failures []*item
	skipped  map[string]int // reason → count over the walk (failures and not_accepted)

	mu     sync.Mutex
	hashes map[string]string // rel path → sha256 of files written in this run
}

// walk derives the benchmark composition from the 1-worker walk.
func (a *assembly) walk() {
	a.skipped = map[string]int{}
	var lf, pos []*included
	statsBy := map[string]*lesionStats{}
	for _, l := range a.lists {
		st := statsBy[l.lesion]
		if st == nil {
			n := a.cfg.RF + a.cfg.RR
			rfT := rfCount(n, a.cfg.RFRatio(l.lesion))
			st = &lesionStats{lesion: l.lesion, notAccepted: map[string]int{}, failed: map[string]int{},
				targetLF: a.cfg.LF, targetRF: rfT, targetRR: n - rfT}
			statsBy[l.lesion] = st
			a.stats = append(a.stats, st)
		}
		walked := l.items[:l.walkLen()]
		if l.positive {
			st.seenPos = len(walked)
		} else {
			st.seenNeg = len(walked)
		}
		for _, it := range walked {
			switch {
			case it.outcome == nil:
				st.notAccepted[it.res.Status]++
				a.skipped[notAcceptedPfx+it.res.Status]++
			case !it.outcome.OK:
				st.failed[it.outcome.Reason]++
				a.skipped[it.outcome.Reason]++
				a.failures = append(a.failures, it)
			}
		}
		incs := a.listRecords(l)
		if !l.positive {
			lf = append(lf, incs...)
			st.lf = len(incs)
			continue
		}
		pos = append(pos, incs...)
		for _, inc := range incs {
			if inc.path == benchmark.RevisionFree {
				st.rf++
			} else {
				st.rr++
			}
		}
	}
	a.records = append(lf, pos...)
}

// listRecords is the benchmark's cases from a decided list: its walk's
// successes in candidate order; of a positive list the first
// rfCount(successes) are revision-free (their records turned to that
// form here, once), the others revision-required. Computed once per list,
// for the renderer ahead or for the walk, whichever asks first.
func (a *assembly) listRecords(l *list) []*included {
	if l.records != nil {
		return *l.records
	}
	var succ []*item
	for _, it := range l.items[:l.walkLen()] {
		if it.success() {
			succ = append(succ, it)
		}
	}
	incs := make([]*included, 0, len(succ))
	nRF := rfCount(len(succ), a.cfg.RFRatio(l.lesion))
	for i, it := range succ {
		inc := &included{l: l, it: it, path: benchmark.LesionFree, rec: it.outcome.Record}
		if l.positive {
			inc.path = benchmark.RevisionRequired
			if i < nRF {
				inc.path = benchmark.RevisionFree
				makeRF(inc.rec)
			}
		}
		incs = append(incs, inc)
	}
	l.records = &incs
	return incs
}

// makeRF turns a stored (RR-form) positive record into its RF form: the
// two records differ only in no_deformation and the contour-eval answer
// (§9.6).
func makeRF(rec *benchmark.Record) {
	if rec.Contour == nil {
		return
	}
	rec.Contour.NoDeformation = true
	rec.Contour.ContourEval.Answer = "No"
	rec.Contour.ContourEval.AnswerIndex = 2
}

func (a *assembly) run(ctx context.Context) (*Summary, error) {
	a.walk()
	if len(a.records) == 0 {
		// An empty benchmark is invalid (format.md §8.1): write nothing.
		return nil, global("no case was accepted and processed (%s): an empty benchmark is invalid, nothing written", a.skippedSummary())
	}
	for _, d := range []string{imagesDir, masksDir} {
		if err := os.MkdirAll(filepath.Join(a.opt.Out, d), 0o755); err != nil {
			return nil, global("%s: %w", d, safefile.Reason(err))
		}
	}
	// The folders about to be written are recorded before they exist, so
	// a resumed or later build knows them as its own.
	for _, inc := range a.records {
		a.own.pending[inc.it.c.KeyID()] = true
	}
	if err := a.own.save(a.opt.Job, a.opt.Out); err != nil {
		return nil, global("writing the build marker: %w", err)
	}
	if err := a.renderAll(ctx); err != nil {
		return nil, err
	}
	if err := a.removeStale(); err != nil {
		return nil, global("removing stale bundle folders: %w", err)
	}
	recs := make([]*benchmark.Record, len(a.records))
	for i, inc := range a.records {
		recs[i] = inc.rec
	}
	// Side files, then the reports and chexpercept.json, then SHA256SUMS.
	files := []struct {
		name string
		data func() ([]byte, error)
	}{
		{deformJSON, a.deformationJSON},
		{casesJSONL, a.casesJSONL},
		{infoJSON, a.buildInfo},
		{reportJSON, a.buildReport},
		{skippedCSV, a.skippedCSV},
		{benchmarkJSON, func() ([]byte, error) { return benchmark.Marshal(recs), nil }},
	}
	// A benchmark declares its lesion set unless it is the built-in one
	// (whose benchmarks, like the released one, carry no declaration).
	if set := a.cfg.LesionSet(); !set.IsDefault() {
		files = slices.Insert(files, len(files)-1, struct {
			name string
			data func() ([]byte, error)
		}{lesionsJSON, func() ([]byte, error) { return benchmark.MarshalLesions(set) }})
	} else if err := os.Remove(filepath.Join(a.opt.Out, lesionsJSON)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		// The output directory was verified as this command's own, so
		// a declaration there was written by an earlier build.
		return nil, global("removing the stale %s: %w", lesionsJSON, err)
	}
	for _, f := range files {
		data, err := f.data()
		if err != nil {
			return nil, global("%s: %w", f.name, err)
		}
		if err := a.writeOut(f.name, data); err != nil {
			return nil, global("%w", err)
		}
	}
	if err := a.writeSums(); err != nil {
		return nil, global("%s: %w", sumsFile, err)
	}
	// SHA256SUMS now lists every bundle file.
	a.own.pending = map[string]bool{}
	if err := a.own.save(a.opt.Job, a.opt.Out); err != nil {
		return nil, global("writing the build marker: %w", err)
	}
	s := &Summary{Included: len(a.records), Failed: len(a.failures), Shortfalls: a.shortfalls()}
	for _, inc := range a.records {
		s.Questions += questionCount(inc.rec, inc.path)
	}
	return s, nil
}

// writeOut writes a root file atomically and remembers its digest.
func (a *assembly) writeOut(rel string, data []byte) error {
	if err := atomicfile.WriteFile(a.opt.Job, filepath.Join(a.opt.Out, filepath.FromSlash(rel)), data); err != nil {
		return err
	}
	a.mu.Lock()
	a.hashes[rel] = benchmark.SHA256Hex(data)
	a.mu.Unlock()
	return nil
}

// renderAll renders every included case's bundle folder and copies its
// masks, over the build's workers.
func (a *assembly) renderAll(ctx context.Context) error {
	jobs := make(chan *included)
	errs := make(chan error, len(a.records)+1)
	prog := newStageProgress(a.opt, "assembling", "cases rendered", len(a.records))
	var wg sync.WaitGroup
	// The cases of lists decided while processing went on are rendered
	// (or being rendered) ahead; they count here as they finish.
	if n := a.ahead.attach(prog); n > 0 {
		prog.add(n)
	}
	for w := 0; w < a.opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for inc := range jobs {
				if err := a.renderCase(inc); err != nil {
					errs <- err
				}
				prog.add(1)
			}
		}()
	}
	for _, inc := range a.records {
		if ctx.Err() != nil {
			break
		}
		if a.ahead.has(inc.it.c.KeyID()) {
			continue
		}
		jobs <- inc
	}
	close(jobs)
	wg.Wait()
	aheadErr := a.ahead.finish()
	prog.finish(ctx.Err() != nil || len(errs) > 0)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if aheadErr != nil && ctx.Err() == nil {
		return aheadErr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("build interrupted: %w", err)
	}
	return nil
}

// renderCase writes chexpercept/<key_id>/ and masks/<key_id>/ through
// staging folders.
func (a *assembly) renderCase(inc *included) error {
	c, o := inc.it.c, inc.it.outcome
	key := o.KeyID
	gray, err := frame.LoadGray(c.Image)
	if err != nil {
		return global("%s: the image became unreadable during the build: %w", key, err)
	}
	var imgs map[string]*image.RGBA
	if inc.rec.Contour == nil {
		imgs = map[string]*image.RGBA{qagen.XrayPath: render.Gray2RGB(gray)}
	} else {
		masks, lungs, err := a.renderMasks(key, inc.rec, o)
		if err != nil {
			return global("%s: work state: %w", key, err)
		}
		if imgs, err = qagen.RenderRecordImages(gray, inc.rec, masks, lungs, a.cfg); err != nil {
			return global("%s: rendering: %w", key, err)
		}
	}
	hashes := map[string]string{}
	fw := newFolderWriter(filepath.Join(a.opt.Out, imagesDir, key), a.e.rename)
	var buf bytes.Buffer
	encode := bundleEncoder(a.cfg.BundlePNGCompression)
	for _, rel := range slices.Sorted(maps.Keys(imgs)) {
		buf.Reset()
		if err := encode(&buf, imgs[rel]); err != nil {
			fw.abort()
			return global("%s: encoding %s: %w", key, rel, err)
		}
		if err := fw.add(rel, buf.Bytes()); err != nil {
			fw.abort()
			return global("%w", err)
		}
		hashes[path.Join(imagesDir, key, rel)] = benchmark.SHA256Hex(buf.Bytes())
	}
	if err := fw.commit(); err != nil {
		fw.abort()
		return global("%s: %w", key, err)
	}
	if len(o.MaskNames) > 0 {
		mw := newFolderWriter(filepath.Join(a.opt.Out, masksDir, key), a.e.rename)
		for _, n := range o.MaskNames {
			data, err := safefile.ReadFile(filepath.Join(a.workDir, key, workMasks, n+".png"), imagefile.MaxFileBytes, safefile.NoFollow)
			if err != nil {
				mw.abort()
				return global("%s: work mask %s: %w", key, n, safefile.Reason(err))
			}
			if err := mw.add(n+".png", data); err != nil {
				mw.abort()
				return global("%w", err)
			}
			hashes[path.Join(masksDir, key, n+".png")] = benchmark.SHA256Hex(data)
		}
		if err := mw.commit(); err != nil {
			mw.abort()
			return global("%s: %w", key, err)
		}
	} else if err := os.RemoveAll(filepath.Join(a.opt.Out, masksDir, key)); err != nil {
		return global("%w", err)
	}
	a.mu.Lock()
	for k, v := range hashes {
		a.hashes[k] = v
	}
	a.mu.Unlock()
	return nil
}

// renderMasks loads the masks a positive record's images need from work/.
func (a *assembly) renderMasks(key string, rec *benchmark.Record, o *Outcome) (map[string]mask.Mask, render.Lungs, error) {
	need := map[string]bool{}
	cq := rec.Contour
	for _, n := range cq.RevisionBeforeMasks {
		need[n] = true
	}
	for _, n := range cq.RevisionAfterMasks {
		need[n] = true
	}
	for _, op := range cq.RevisionResult.AnswerOptions {
		for _, n := range op.Masks {
			if !render.IsToken(n) {
				need[n] = true
			}
		}
	}
	masks := map[string]mask.Mask{}
	for _, n := range slices.Sorted(maps.Keys(need)) {
		m, err := loadWorkMask(a.workDir, key, n)
		if err != nil {
			return nil, render.Lungs{}, fmt.Errorf("mask %s: %w", n, err)
		}
		masks[n] = m
	}
	var lungs render.Lungs
	for _, n := range o.TokenNames {
		m, err := loadWorkMask(a.workDir, key, n)
		if err != nil {
			return nil, render.Lungs{}, fmt.Errorf("token %s: %w", n, err)
		}
		switch n {
		case render.LungToken("right", "chex"):
			lungs.ChexRight = m
		case render.LungToken("left", "chex"):
			lungs.ChexLeft = m
		case render.LungToken("right", "cxas"):
			lungs.CxasRight, lungs.HasSecondary = m, true
		case render.LungToken("left", "cxas"):
			lungs.CxasLeft, lungs.HasSecondary = m, true
		}
	}
	return masks, lungs, nil
}

// removeStale deletes bundle and mask folders of key_ids that are not in
// this benchmark (§11).
func (a *assembly) removeStale() error {
	keep := map[string]bool{}
	for _, inc := range a.records {
		keep[inc.it.c.KeyID()] = true
	}
	for _, d := range []string{imagesDir, masksDir} {
		ents, err := os.ReadDir(filepath.Join(a.opt.Out, d))
		if err != nil {
			return err
		}
		for _, en := range ents {
			if !keep[en.Name()] && a.own.mayRemove(d, en.Name()) {
				if err := os.RemoveAll(filepath.Join(a.opt.Out, d, en.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// deformationJSON writes deformation_results.json one case at a time (the
// per-case objects are large, so they stay in work/ until now): each value
// is marshalled alone and indented one level, which gives the bytes the §6
// writer produces for the whole object.
func (a *assembly) deformationJSON() ([]byte, error) {
	var b bytes.Buffer
	n := 0
	for _, inc := range a.records {
		o := inc.it.outcome
		if !o.Positive {
			continue
		}
		d := o.Deformation
		if d == nil {
			w := readWork(a.workDir, o.KeyID, "", a.cfg.LesionSet())
			if w == nil || w.Deformation == nil {
				// Say why when the work state could not be read at all
				// (out of descriptors, an I/O error), not only that it
				// lacks the results.
				name := filepath.Join(a.workDir, o.KeyID, caseJSON)
				if _, err := safefile.ReadFile(name, maxMetaBytes, safefile.NoFollow); err != nil {
					return nil, fmt.Errorf("%s: reading its work state: %w", o.KeyID, err)
				}
				return nil, fmt.Errorf("%s: work state has no deformation results", o.KeyID)
			}
			d = w.Deformation
		}
		if n == 0 {
			b.WriteString("{\n")
		} else {
			b.WriteString(",\n")
		}
		n++
		b.WriteString("  ")
		b.Write(ojson.MarshalCompact(ojson.Str(o.KeyID)))
		b.WriteString(": ")
		b.Write(bytes.ReplaceAll(ojson.Marshal(d), []byte("\n"), []byte("\n  ")))
	}
	if n == 0 {
		return ojson.Marshal(ojson.NewObject()), nil
	}
	b.WriteString("\n}")
	return b.Bytes(), nil
}

func (a *assembly) casesJSONL() ([]byte, error) {
	var b bytes.Buffer
	for _, inc := range a.records {
		c := inc.it.c
		src := ojson.Null()
		if len(c.Source) > 0 {
			v, err := ojson.Parse(c.Source)
			if err != nil {
				return nil, fmt.Errorf("%s: source: %w", c.KeyID(), err)
			}
			src = v
		}
		imageID := ojson.Null()
		if c.ImageID != nil {
			imageID = ojson.Str(*c.ImageID)
		}
		v := ojson.NewObject().
			Set("key_id", ojson.Str(c.KeyID())).
			Set("lesion", ojson.Str(c.Lesion)).
			Set("path", ojson.Str(string(inc.path))).
			Set("image_id", imageID).
			Set("rank", ojson.Int(int64(c.Rank))).
			Set("source_type", ojson.Str(c.SourceType)).
			Set("case_seed", ojson.Str(inc.it.outcome.CaseSeed)).
			Set("questions", ojson.Int(int64(questionCount(inc.rec, inc.path)))).
			Set("source", src)
		b.Write(ojson.MarshalCompact(v))
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// counts are the composition totals of build_info.json and the report.
func (a *assembly) counts() *ojson.Value {
	var lf, rf, rr, q int
	imgs := map[string]bool{}
	for _, inc := range a.records {
		switch inc.path {
		case benchmark.LesionFree:
			lf++
		case benchmark.RevisionFree:
			rf++
		default:
			rr++
		}
		q += questionCount(inc.rec, inc.path)
		imgs[inc.it.c.DedupKey()] = true
	}
	return ojson.NewObject().
		Set("cases", ojson.Int(int64(len(a.records)))).
		Set(string(benchmark.LesionFree), ojson.Int(int64(lf))).
		Set(string(benchmark.RevisionFree), ojson.Int(int64(rf))).
		Set(string(benchmark.RevisionRequired), ojson.Int(int64(rr))).
		Set("questions", ojson.Int(int64(q))).
		Set("unique_cxrs", ojson.Int(int64(len(imgs))))
}

// reviewsSHA256 is the digest of the decisions the build used (§11), or
// "" with --accept-all.
func (a *assembly) reviewsSHA256() string {
	if a.opt.ReviewMode == ModeAcceptAll {
		return ""
	}
	type entry struct {
		key string
		v   *ojson.Value
	}
	var es []entry
	for _, l := range a.lists {
		for _, it := range l.items[:l.walkLen()] {
			if it.res.Decision == "" {
				continue
			}
			opt := func(s *string) *ojson.Value {
				if s == nil {
					return ojson.Null()
				}
				return ojson.Str(*s)
			}
			es = append(es, entry{it.c.KeyID(), ojson.Arr(ojson.Str(it.c.KeyID()), ojson.Str(it.res.Decision), opt(it.res.ImageSHA256), opt(it.res.MaskSHA256))})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].key < es[j].key })
	arr := ojson.Arr()
	for _, e := range es {
		arr.A = append(arr.A, e.v)
	}
	return benchmark.SHA256Hex(ojson.MarshalCompact(arr))
}

func (a *assembly) buildInfo() ([]byte, error) {
	cfgv, err := ojson.ValueOf(a.cfg)
	if err != nil {
		return nil, err
	}
	srcSHA, err := benchdir.SHA256File(a.sourcePath)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", a.sourcePath, err)
	}
	csvs := map[string]bool{}
	for _, c := range a.cases {
		if c.Chexmask != nil {
			csvs[c.Chexmask.CSV] = true
		}
	}
	chex := ojson.Arr()
	for _, p := range slices.Sorted(maps.Keys(csvs)) {
		h, err := benchdir.SHA256File(p)
		if err != nil {
			return nil, fmt.Errorf("CheXmask CSV %s: %w", p, err)
		}
		chex.A = append(chex.A, ojson.NewObject().Set("file", ojson.Str(filepath.Base(p))).Set("sha256", ojson.Str(h)))
	}
	sampleSeed := ojson.Null()
	if a.sampleSeed != nil {
		sampleSeed = ojson.Num(fmt.Sprint(*a.sampleSeed))
	}
	rev := ojson.Null()
	if h := a.reviewsSHA256(); h != "" {
		rev = ojson.Str(h)
	}
	v := ojson.NewObject().
		Set("tool_version", ojson.Str(version.String())).
		Set("config", cfgv).
		Set("sample_seed", sampleSeed).
		Set("seed", ojson.Num(fmt.Sprint(a.cfg.Seed))).
		Set("review_mode", ojson.Str(a.opt.ReviewMode)).
		Set("templates_version", ojson.Str(qagen.TemplatesVersion())).
		Set("source_file", ojson.Str(filepath.Base(a.sourcePath))).
		Set("source_sha256", ojson.Str(srcSHA)).
		Set("chexmask_csv_sha256", chex).
		Set("reviews_sha256", rev).
		Set("counts", a.counts()).
		Set("phantom_source", ojson.Bool(phantomSource(a.sourcePath)))
	return ojson.Marshal(v), nil
}

// phantomSource reports whether the source file lies in a folder the
// phantom generator wrote (its marker is there): the benchmark is then
// synthetic, and a report over it says so.
func phantomSource(source string) bool {
	fi, err := os.Lstat(filepath.Join(filepath.Dir(source), phantom.MarkerName))
	return err == nil && fi.Mode().IsRegular()
}

// skippedSummary lists the skip reasons of the walk with their counts,
// e.g. "not_accepted:missing 18, image_unreadable 2", or "no candidates".
func (a *assembly) skippedSummary() string {
	if len(a.skipped) == 0 {
		return "no candidates"
	}
	parts := make([]string, 0, len(a.skipped))
	for _, k := range slices.Sorted(maps.Keys(a.skipped)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, a.skipped[k]))
	}
	return "skipped: " + strings.Join(parts, ", ")
}

func reasonCounts(m map[string]int) *ojson.Value {
	o := ojson.NewObject()
	for _, k := range slices.Sorted(maps.Keys(m)) {
		o.Set(k, ojson.Int(int64(m[k])))
	}
	return o
}

func (a *assembly) buildReport() ([]byte, error) {
	les := ojson.Arr()
	for _, st := range a.stats {
		na := ojson.NewObject()
		for _, k := range []string{reviewlog.Missing, reviewlog.Rejected, reviewlog.Disputed, reviewlog.Stale} {
			na.Set(k, ojson.Int(int64(st.notAccepted[k])))
		}
		three := func(lf, rf, rr int) *ojson.Value {
			return ojson.NewObject().Set("lf", ojson.Int(int64(lf))).Set("rf", ojson.Int(int64(rf))).Set("rr", ojson.Int(int64(rr)))
		}
		les.A = append(les.A, ojson.NewObject().
			Set("lesion", ojson.Str(st.lesion)).
			Set("candidates_seen", ojson.NewObject().
				Set("negative", ojson.Int(int64(st.seenNeg))).
				Set("positive", ojson.Int(int64(st.seenPos)))).
			Set("not_accepted", na).
			Set("failed", reasonCounts(st.failed)).
			Set("included", three(st.lf, st.rf, st.rr)).
			Set("targets", three(st.targetLF, st.targetRF, st.targetRR)).
			Set("shortfall", three(max(0, st.targetLF-st.lf), max(0, st.targetRF-st.rf), max(0, st.targetRR-st.rr))))
	}
	fails := ojson.Arr()
	for _, it := range a.failures {
		fails.A = append(fails.A, ojson.NewObject().
			Set("key_id", ojson.Str(it.c.KeyID())).
			Set("lesion", ojson.Str(it.c.Lesion)).
			Set("label", ojson.Str(it.c.Label)).
			Set("reason", ojson.Str(it.outcome.Reason)).
			Set("detail", ojson.Str(it.outcome.Detail)))
	}
	counts := a.counts()
	v := ojson.NewObject().
		Set("lesions", les).
		Set("unique_cxrs", counts.Get("unique_cxrs")).
		Set("questions", counts.Get("questions")).
		Set("skipped", reasonCounts(a.skipped)).
		Set("failures", fails)
	return ojson.Marshal(v), nil
}

func (a *assembly) skippedCSV() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write([]string{"key_id", "lesion", "label", "reason", "detail"}); err != nil {
		return nil, err
	}
	for _, it := range a.failures {
		if err := w.Write([]string{it.c.KeyID(), it.c.Lesion, it.c.Label, it.outcome.Reason, it.outcome.Detail}); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// writeSums writes SHA256SUMS over every file of the tree except itself,
// build_timing.json, inspect/ and work/ (§11), sorted by path bytes.
func (a *assembly) writeSums() error {
	// A link given as the output directory is walked through.
	root := a.opt.Out
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	var rels []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == workDirName || rel == inspectDir {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == sumsFile || rel == timingJSON || strings.HasPrefix(path.Base(rel), sumsFile+".tmp-") {
			return nil
		}
		rels = append(rels, rel)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(rels)
	var b bytes.Buffer
	for _, rel := range rels {
		h, ok := a.hashes[rel]
		if !ok {
			if h, err = fileSHA256(filepath.Join(a.opt.Out, filepath.FromSlash(rel))); err != nil {
				return err
			}
		}
		fmt.Fprintf(&b, "%s  %s\n", h, rel)
	}
	return a.writeOut(sumsFile, b.Bytes())
}

func fileSHA256(p string) (string, error) {
	f, err := safefile.Open(p, safefile.NoFollow)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read-only
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// shortfalls lists every target not reached.
func (a *assembly) shortfalls() []string {
	var out []string
	for _, st := range a.stats {
		for _, s := range []struct {
			path       string
			have, want int
		}{{"LF", st.lf, st.targetLF}, {"RF", st.rf, st.targetRF}, {"RR", st.rr, st.targetRR}} {
			if s.have < s.want {
				out = append(out, fmt.Sprintf("%s %s: %d of %d (short by %d)", st.lesion, s.path, s.have, s.want, s.want-s.have))
			}
		}
	}
	return out
}

// printSummary writes the end-of-build summary (§14).
func (a *assembly) printSummary(w io.Writer) {
	if a.opt.ReviewMode == ModeAcceptAll {
		fmt.Fprintln(w, "WARNING: built with --accept-all: every candidate was accepted without expert review; this benchmark is UNREVIEWED.")
	}
	type rc struct {
		reason string
		n      int
	}
	var rcs []rc
	for k, n := range a.skipped {
		rcs = append(rcs, rc{k, n})
	}
	sort.Slice(rcs, func(i, j int) bool {
		if rcs[i].n != rcs[j].n {
			return rcs[i].n > rcs[j].n
		}
		return rcs[i].reason < rcs[j].reason
	})
	if len(rcs) == 0 {
		fmt.Fprintln(w, "skipped: none")
	} else {
		fmt.Fprintln(w, "skipped by reason:")
		for _, r := range rcs {
			fmt.Fprintf(w, "  %-32s %d\n", r.reason, r.n)
		}
	}
	fmt.Fprintln(w, "composition (LF / RF / RR):")
	for _, st := range a.stats {
		fmt.Fprintf(w, "  %-14s %4d / %4d / %4d\n", st.lesion, st.lf, st.rf, st.rr)
	}
	c := a.counts()
	fmt.Fprintf(w, "total: %s cases, %s questions, %s unique CXRs\n", c.Get("cases").N, c.Get("questions").N, c.Get("unique_cxrs").N)
	for _, s := range a.shortfalls() {
		fmt.Fprintln(w, "warning: target shortfall:", s)
	}
}

// bundleEncoder is the encoder of the bundle's images for the build
// configuration's bundle_png_compression value.
func bundleEncoder(compression string) func(io.Writer, image.Image) error {
	switch compression {
	case buildcfg.StandardPNG:
		return render.EncodePNG
	case buildcfg.FastPNG:
		return render.EncodeFastBundlePNG
	}
	return render.EncodeBundlePNG
}

// maskEncoder is the encoder of the work state's masks (copied to the
// bundle's masks/ folder) for the bundle_png_compression value: only the
// fast setting changes it.
func maskEncoder(compression string) func(io.Writer, mask.Mask) error {
	if compression == buildcfg.FastPNG {
		return mask.EncodeFastPNG
	}
	return mask.EncodePNG
}
