package build

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/phantom"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/validate"
)

// The end-to-end tests share one small phantom set (3 positives and 3
// negatives per lesion) and two reference builds of it with 1 worker: one
// of all seven lesions (TestBuildEndToEnd holds it to the documented
// counts and to a 4-worker build) and one of two lesions, a lung lesion
// and the heart-type one (twoLesionOptions), for the tests of what a
// build does with a finished tree, which do not depend on the number of
// lesions.

var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixtureErr  error
	refOnce     sync.Once
	refOut      string
	refErr      error
	ref2Once    sync.Once
	ref2Out     string
	ref2Err     error
)

func TestMain(m *testing.M) {
	if os.Getenv("CHX_BUILD_CHILD") == "1" {
		// Child mode of TestInterruptedBuildResumes: build the two
		// lesions until the third positive case starts (the first two
		// are done: one worker), then say so on stdout and wait to be
		// killed.
		opt := twoLesionOptions(os.Getenv("CHX_SOURCE"), os.Getenv("CHX_OUT"), 1)
		var positives atomic.Int32
		opt.testHook = func(c *source.Case) {
			if strings.Contains(c.KeyID(), "_positive_") && positives.Add(1) == 3 {
				fmt.Println(childInterruptible)
				io.Copy(io.Discard, os.Stdin) // the parent never writes
			}
		}
		_, err := Run(context.Background(), opt)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	code := m.Run()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// childInterruptible is the line the child build prints when it is
// mid-build and waiting to be killed.
const childInterruptible = "interruptible"

func smallOptions(src, out string, workers int) Options {
	cfg := buildcfg.Default()
	cfg.LF, cfg.RF, cfg.RR = 1, 1, 1
	// The fastest PNG level: the same pixels and the same code paths at a
	// fraction of the deflate time, which is most of a build's CPU.
	// TestBundlePNGCompression holds the levels against each other.
	cfg.BundlePNGCompression = buildcfg.FastPNG
	return Options{Source: src, Out: out, Config: cfg, Workers: workers,
		Decisions: reviewlog.AcceptAll{}, ReviewMode: ModeAcceptAll}
}

// twoLesions are the lesions of twoLesionOptions: a lung lesion and the
// heart-type one.
var twoLesions = []string{"effusion", "cardiomegaly"}

// twoLesionOptions are smallOptions for two lesions (6 records).
func twoLesionOptions(src, out string, workers int) Options {
	opt := smallOptions(src, out, workers)
	opt.Config.Lesions = slices.Clone(twoLesions)
	return opt
}

func phantomManifest(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end build skipped in -short mode")
	}
	fixtureOnce.Do(func() {
		fixtureDir, fixtureErr = os.MkdirTemp("", "chexpercept-build-e2e-")
		if fixtureErr != nil {
			return
		}
		_, fixtureErr = phantom.Generate(context.Background(), phantom.Options{OutDir: filepath.Join(fixtureDir, "phantom"), CasesPerLesion: 3, Seed: 1, Workers: 2, FastPNG: true})
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return filepath.Join(fixtureDir, "phantom", "manifest.jsonl")
}

// referenceBuild is the 1-worker build of the phantom set.
func referenceBuild(t *testing.T) string {
	src := phantomManifest(t)
	refOnce.Do(func() {
		refOut = filepath.Join(fixtureDir, "ref")
		_, refErr = Run(context.Background(), smallOptions(src, refOut, 1))
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	return refOut
}

// twoLesionBuild is the 1-worker build of the phantom set's two lesions
// (twoLesionOptions).
func twoLesionBuild(t *testing.T) string {
	src := phantomManifest(t)
	ref2Once.Do(func() {
		ref2Out = filepath.Join(fixtureDir, "ref2")
		_, ref2Err = Run(context.Background(), twoLesionOptions(src, ref2Out, 1))
	})
	if ref2Err != nil {
		t.Fatal(ref2Err)
	}
	return ref2Out
}

func readSums(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, sumsFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkSums verifies every SHA256SUMS line against the file on disk.
func checkSums(t *testing.T, dir string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(readSums(t, dir), "\n"), "\n")
	prev := ""
	for _, ln := range lines {
		h, rel, ok := strings.Cut(ln, "  ")
		if !ok || len(h) != 64 {
			t.Fatalf("malformed SHA256SUMS line %q", ln)
		}
		if rel <= prev {
			t.Fatalf("SHA256SUMS not sorted at %q", rel)
		}
		prev = rel
		if strings.HasPrefix(rel, "work/") || strings.HasPrefix(rel, "inspect/") || rel == timingJSON {
			t.Fatalf("SHA256SUMS lists %s", rel)
		}
		got, err := fileSHA256(filepath.Join(dir, rel))
		if err != nil || got != h {
			t.Fatalf("%s: digest %s, listed %s (%v)", rel, got, h, err)
		}
	}
}

// checkOptionsDistinct decodes every revision option image of a built
// benchmark and fails when a distractor shows the answer's picture (the
// question would have two right answers). It counts on its own,
// apart from validate's identical_option_images check.
func checkOptionsDistinct(t *testing.T, dir string) {
	t.Helper()
	b, err := benchdir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range b.Records {
		if r.Path() != benchmark.RevisionRequired {
			continue
		}
		rr := r.Contour.RevisionResult
		pix := make([][]byte, len(rr.AnswerOptions))
		for k, o := range rr.AnswerOptions {
			name := filepath.Join(dir, benchmark.ImagesDir, r.KeyID, filepath.FromSlash(benchmark.RevisionDir), o.RelativePath)
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			rgba, ok := img.(*image.RGBA)
			if !ok {
				t.Fatalf("%s decodes to %T, want *image.RGBA", name, img)
			}
			pix[k] = rgba.Pix
		}
		for k := range pix {
			if k+1 != rr.AnswerIndex && bytes.Equal(pix[k], pix[rr.AnswerIndex-1]) {
				t.Errorf("%s: distractor option %d shows the answer's image (option %d)", r.KeyID, k+1, rr.AnswerIndex)
			}
		}
		n++
	}
	if n == 0 {
		t.Fatal("no revision-required record to check")
	}
}

func TestBuildEndToEnd(t *testing.T) {
	t.Parallel()
	ref := referenceBuild(t)
	rep, err := validate.Run(context.Background(), ref, validate.Options{Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var b bytes.Buffer
		rep.WriteText(&b)
		t.Fatalf("validate --deep failed:\n%s", b.String())
	}
	checkSums(t, ref)
	checkOptionsDistinct(t, ref)
	// deformation_results.json names its masks (warnings, so checked here):
	// every mask_path is a mask name with a file in masks/<key_id>/.
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.Code, "deformation_") {
			t.Errorf("validate: %s", f)
		}
	}
	// All seven lesions and all three paths.
	for _, les := range benchmark.DefaultLesions().Names() {
		for _, p := range benchmark.Paths {
			if rep.Counts[les][p] != 1 {
				t.Errorf("%s %s: %d records, want 1", les, p, rep.Counts[les][p])
			}
		}
	}
	info, err := os.ReadFile(filepath.Join(ref, infoJSON))
	if err != nil {
		t.Fatal(err)
	}
	iv, err := ojson.Parse(info)
	if err != nil {
		t.Fatal(err)
	}
	if iv.Get("review_mode").S != ModeAcceptAll || iv.Get("reviews_sha256").Kind != ojson.KindNull {
		t.Errorf("build_info review fields: %s", info)
	}
	if ps := iv.Get("phantom_source"); ps == nil || ps.Kind != ojson.KindBool || !ps.B {
		t.Errorf("build_info phantom_source of a phantom build: %v", ps)
	}
	if iv.Get("config").Get("workers") != nil {
		t.Error("build_info.json records workers")
	}
	// Only build_timing.json may hold timestamps.
	if bytes.Contains(info, []byte(`"start"`)) || bytes.Contains(info, []byte(`"end"`)) {
		t.Error("build_info.json holds a timestamp")
	}

	// Four workers give the same bytes, and assembly overlaps processing:
	// the cases of the lesions already decided are rendered while the
	// last lesion's cases are processed.
	out4 := filepath.Join(t.TempDir(), "b4")
	opt4 := smallOptions(phantomManifest(t), out4, 4)
	seen := overlapHooks(&opt4)
	if _, err := Run(context.Background(), opt4); err != nil {
		t.Fatal(err)
	}
	if !seen.Load() {
		t.Errorf("no bundle folder was rendered while the %s cases were processed", benchmark.DefaultLesions().Names()[len(benchmark.DefaultLesions().Names())-1])
	}
	if readSums(t, out4) != readSums(t, ref) {
		t.Fatal("SHA256SUMS differ between 1 and 4 workers")
	}
	checkSums(t, out4)
}

// TestRerunRenamesNoFolder: a rerun over a finished tree reuses work/ and
// changes nothing, and logs the progress of every stage (the PNG floor is
// measured in TestReviewsAndFailures, on a smaller build). It renames no
// case folder, so a rename that fails cannot lose one: here every rename
// of a bundle folder fails. The tree is the two-lesion build (6 cases).
func TestRerunRenamesNoFolder(t *testing.T) {
	t.Parallel()
	ref := twoLesionBuild(t)
	out := filepath.Join(t.TempDir(), "b")
	outdirtest.CopyTree(t, ref, out)
	rerun := twoLesionOptions(phantomManifest(t), out, 2)
	var log bytes.Buffer
	rerun.Stderr, rerun.LogEvery = &log, time.Nanosecond
	var mu sync.Mutex
	var renamed []string
	rerun.testRename = func(from, to string) error {
		if strings.Contains(from, string(filepath.Separator)+imagesDir+string(filepath.Separator)) ||
			strings.Contains(from, string(filepath.Separator)+masksDir+string(filepath.Separator)) {
			mu.Lock()
			renamed = append(renamed, from)
			mu.Unlock()
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EIO}
		}
		return os.Rename(from, to)
	}
	_, err := Run(context.Background(), rerun)
	if err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if len(renamed) > 0 {
		t.Errorf("the rerun renamed unchanged folders: %v", renamed)
	}
	if readSums(t, out) != readSums(t, ref) {
		t.Fatal("SHA256SUMS changed on a rerun")
	}
	checkSums(t, out)
	// Cases rendered while processing went on count as done when
	// assembly starts, so the first count varies.
	if !regexp.MustCompile(`build: assembling: \d+/6 cases rendered, `).MatchString(log.String()) {
		t.Errorf("build log lacks assembling counts:\n%s", log.String())
	}
	for _, want := range []string{
		"build: assembling (6 to do)…\n",
		"build: assembling done: 6/6 cases rendered in ",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("build log lacks %q:\n%s", want, log.String())
		}
	}
}

// TestInterruptedBuildResumes kills a child build of the two lesions
// mid-run, resumes it and compares SHA256SUMS with the uninterrupted
// two-lesion build.
func TestInterruptedBuildResumes(t *testing.T) {
	t.Parallel()
	ref := twoLesionBuild(t)
	src := phantomManifest(t)
	out := filepath.Join(t.TempDir(), "bi")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CHX_BUILD_CHILD=1", "CHX_SOURCE="+src, "CHX_OUT="+out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe() // held open: the child waits on it
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child says when it is mid-build; a child that ends first, or
	// says nothing for five minutes, fails the test.
	ready, drained := make(chan bool, 1), make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == childInterruptible {
				ready <- true
				io.Copy(io.Discard, stdout)
				return
			}
		}
		ready <- false
	}()
	var killed bool
	select {
	case killed = <-ready:
	case <-time.After(5 * time.Minute):
	}
	cmd.Process.Kill()
	<-drained // the pipe is read to its end before Wait closes it
	werr := cmd.Wait()
	if !killed {
		t.Fatalf("the child did not reach its third positive case before it ended or five minutes passed: %v\n%s", werr, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, sumsFile)); err == nil {
		t.Fatal("the interrupted build wrote SHA256SUMS")
	}
	if _, err := Run(context.Background(), twoLesionOptions(src, out, 2)); err != nil {
		t.Fatal(err)
	}
	if readSums(t, out) != readSums(t, ref) {
		t.Fatal("SHA256SUMS of the resumed build differ from the uninterrupted build")
	}
}

// TestReviewsAndFailures builds two lesions from a reviews.jsonl in which
// some candidates are rejected, disputed, unsure or stale, and one case
// panics: the reports count each exactly once over the 1-worker walk.
func TestReviewsAndFailures(t *testing.T) {
	t.Parallel()
	src := phantomManifest(t)
	cfg := buildcfg.Default()
	cfg.Lesions = []string{"edema", "effusion"}
	cfg.LF, cfg.RF, cfg.RR = 1, 1, 0
	cfg.BundlePNGCompression = buildcfg.FastPNG // as smallOptions: the same pixels, less deflate time
	cases, _, err := source.ReadSource(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cands, _, _ := source.Sample(context.Background(), cases, cfg, 0)
	byList := map[string][]*source.Case{}
	for _, c := range cands {
		byList[c.Lesion+c.Label] = append(byList[c.Lesion+c.Label], c)
	}
	loader, err := source.NewLoader(nil, cands, cfg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	line := func(c *source.Case, decision string, stale bool) string {
		img, _ := source.ImageSHA256(c)
		if stale {
			img = strings.Repeat("0", 64)
		}
		m := "null"
		if c.Positive() {
			cm, err := loader.CandidateMask(c)
			if err != nil {
				t.Fatal(err)
			}
			m = `"` + source.MaskSHA256(cm) + `"`
		}
		return fmt.Sprintf(`{"key_id":%q,"decision":%q,"image_sha256":%q,"mask_sha256":%s}`, c.KeyID(), decision, img, m)
	}
	edP, edN := byList["edemapositive"], byList["edemanegative"]
	efP, efN := byList["effusionpositive"], byList["effusionnegative"]
	lines := []string{
		line(edN[0], "reject", false), // edema negatives: rejected, stale, then accepted
		line(edN[1], "accept", true),
		line(edN[2], "accept", false),
		line(edP[0], "disputed", false), // edema positives: disputed, then the panicking case, then accepted
		line(edP[1], "accept", false),
		line(edP[2], "accept", false),
		line(efP[0], "unsure", false), // effusion positives: unsure, accepted
		line(efP[1], "accept", false),
		line(efP[2], "accept", false),
		// effusion negatives: no lines at all → missing ×3
	}
	_ = efN
	revPath := filepath.Join(t.TempDir(), "reviews.jsonl")
	os.WriteFile(revPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	log, err := reviewlog.ReadLog(revPath)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "br")
	var stdout, stderr bytes.Buffer
	// The build also measures its PNG floor and logs every stage.
	opt := Options{Source: src, Out: out, Config: cfg, Workers: 2, Decisions: log, ReviewMode: ModeReviews, Stdout: &stdout,
		Stderr: &stderr, LogEvery: time.Nanosecond, MeasureFloor: true, Inspect: "failed",
		testHook: func(c *source.Case) {
			if c.KeyID() == edP[1].KeyID() {
				panic("synthetic failure for the test")
			}
		}}
	sum, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := os.ReadFile(filepath.Join(out, reportJSON))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := ojson.Parse(rep)
	if err != nil {
		t.Fatal(err)
	}
	// Pipeline failures of the phantom cases may add other reasons; the
	// review outcomes and the panic are fixed by construction.
	sk := rv.Get("skipped")
	for reason, n := range map[string]string{"internal_error": "1", "not_accepted:disputed": "1",
		"not_accepted:missing": "4", "not_accepted:rejected": "1", "not_accepted:stale": "1"} {
		if v := sk.Get(reason); v == nil || v.N != n {
			t.Errorf("skipped %s = %v, want %s (all: %s)", reason, v, n, ojson.MarshalCompact(sk))
		}
	}
	csv, _ := os.ReadFile(filepath.Join(out, skippedCSV))
	if !strings.Contains(string(csv), edP[1].KeyID()+",edema,positive,internal_error,synthetic failure for the test") {
		t.Errorf("skipped.csv:\n%s", csv)
	}
	if len(sum.Shortfalls) == 0 || !strings.Contains(sum.Shortfalls[0], "effusion LF") {
		t.Errorf("included %d, shortfalls %v", sum.Included, sum.Shortfalls)
	}
	// The failed case got its inspect view with the failure explained.
	st, err := os.ReadFile(filepath.Join(out, inspectDir, edP[1].KeyID(), "summary.txt"))
	if err != nil || !strings.Contains(string(st), "FAILED: internal_error") {
		t.Errorf("inspect summary of the failed case: %v\n%s", err, st)
	}
	info, _ := os.ReadFile(filepath.Join(out, infoJSON))
	iv, _ := ojson.Parse(info)
	if iv.Get("reviews_sha256").Kind != ojson.KindString || iv.Get("review_mode").S != ModeReviews {
		t.Errorf("build_info: %s", info)
	}
	if !strings.Contains(stdout.String(), "not_accepted:missing") {
		t.Errorf("summary printout lacks the skipped counts:\n%s", stdout.String())
	}
	for _, want := range []string{
		"build: measuring the PNG floor (",
		"build: measuring the PNG floor: 1/",
		"build: measuring the PNG floor done: ",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("build log lacks %q:\n%s", want, stderr.String())
		}
	}
	if timing, err := os.ReadFile(filepath.Join(out, timingJSON)); err != nil || !bytes.Contains(timing, []byte(`"png_floor"`)) {
		t.Errorf("%s has no png_floor (%v)", timingJSON, err)
	}
}

// TestMIMICLayoutBuild samples the source package's MIMIC-layout fixture
// (MIMIC-CXR-JPG tree, MIMIC-ILS JSON with 512×512 masks, CheXmask CSV)
// and builds it.
func TestMIMICLayoutBuild(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end build skipped in -short mode")
	}
	fx := "../source/testdata/mimic"
	cfg := buildcfg.Default()
	cfg.LF, cfg.RF, cfg.RR = 1, 1, 1
	cases, _, err := source.FromMIMIC(context.Background(), fx, fx+"/mimic_ils_instruction_answer.json", fx+"/lesion_mask", fx+"/chexmask_mimic.csv", "", cfg)
	if err != nil {
		t.Fatal(err)
	}
	cands, _, _ := source.Sample(context.Background(), cases, cfg, 0)
	dir := t.TempDir()
	candPath := filepath.Join(dir, "candidates.jsonl")
	if err := source.WriteCandidates(nil, candPath, cands); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bench")
	opt := smallOptions(candPath, out, 2)
	sum, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Included == 0 {
		t.Fatal("no case included")
	}
	rep, err := validate.Run(context.Background(), out, validate.Options{Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var b bytes.Buffer
		rep.WriteText(&b)
		t.Fatalf("validate --deep failed:\n%s", b.String())
	}
	checkSums(t, out)
	checkOptionsDistinct(t, out)
	// The candidates' sampling seed is recorded.
	info, _ := os.ReadFile(filepath.Join(out, infoJSON))
	iv, _ := ojson.Parse(info)
	if iv.Get("sample_seed").N != "0" {
		t.Errorf("sample_seed: %s", info)
	}
	t.Logf("MIMIC fixture: %d cases, %d questions, %d failed", sum.Included, sum.Questions, sum.Failed)
}

// overlapHooks makes the first case of the last lesion wait, up to two
// minutes, for the renderer ahead to report a case whose bundle folder is
// then in out: assembly renders the cases of the lists already decided
// while the last lesion's cases are still being processed. seen reports
// whether one was.
func overlapHooks(opt *Options) (seen *atomic.Bool) {
	last := benchmark.DefaultLesions().Names()[len(benchmark.DefaultLesions().Names())-1]
	seen = new(atomic.Bool)
	rendered := make(chan string, 1)
	opt.testAhead = func(key string) {
		select {
		case rendered <- key:
		default: // one is enough
		}
	}
	out := opt.Out
	var waited atomic.Bool
	opt.testHook = func(c *source.Case) {
		if c.Lesion != last || !waited.CompareAndSwap(false, true) {
			return
		}
		select {
		case key := <-rendered:
			if fi, err := os.Stat(filepath.Join(out, imagesDir, key)); err == nil && fi.IsDir() {
				seen.Store(true)
			}
		case <-time.After(2 * time.Minute):
		}
	}
	return seen
}

// TestBundlePNGCompression: every value of bundle_png_compression
// writes the same pixels; standard writes image/png's default-level
// bytes (those of builds before package pngenc), so its images differ
// from the default's in bytes only, and its masks are the default's own
// bytes; fast changes the masks' bytes too. The encoders the build picks
// for each value (bundleEncoder, maskEncoder) re-encode the images and
// masks of the two-lesion reference build, which is made at the fast
// level (smallOptions): the fast encoders give its files byte for byte,
// so the comparison is of what the build writes, and the others are held
// against the default value's encoding. Eight images and eight masks,
// spread over the build, are sampled: an encoder that changed pixels or
// bytes would do so on any of them.
func TestBundlePNGCompression(t *testing.T) {
	t.Parallel()
	ref := twoLesionBuild(t)
	files := pngFiles(t, ref)
	var images, masks []string
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		if strings.HasPrefix(rel, masksDir+"/") {
			masks = append(masks, rel)
		} else {
			images = append(images, rel)
		}
	}
	if len(images) == 0 || len(masks) == 0 {
		t.Fatalf("the reference build has %d images and %d masks", len(images), len(masks))
	}
	images, masks = spread(images, 8), spread(masks, 8)
	// Each sample is decoded once, by image/png (the pixels compared) and,
	// for the masks, by package mask (what the mask encoders take).
	decoded, maskOf := map[string]image.Image{}, map[string]mask.Mask{}
	for _, rel := range append(slices.Clone(images), masks...) {
		img, err := png.Decode(bytes.NewReader(files[rel]))
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		decoded[rel] = img
	}
	for _, rel := range masks {
		m, err := mask.DecodePNG(bytes.NewReader(files[rel]))
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		maskOf[rel] = m
	}
	// The default value's bytes, which the other values are held against.
	defaults := map[string][]byte{}
	for _, rel := range images {
		var buf bytes.Buffer
		if err := bundleEncoder("")(&buf, decoded[rel]); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		defaults[rel] = buf.Bytes()
	}
	for _, rel := range masks {
		var buf bytes.Buffer
		if err := maskEncoder("")(&buf, maskOf[rel]); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		defaults[rel] = buf.Bytes()
	}
	for _, tc := range []struct {
		value                 string
		sameImages, sameMasks bool
	}{
		{"", true, true},
		{buildcfg.StandardPNG, false, true},
		{buildcfg.FastPNG, false, false},
	} {
		t.Run("value="+tc.value, func(t *testing.T) {
			t.Parallel() // the maps above are only read
			encImage, encMask := bundleEncoder(tc.value), maskEncoder(tc.value)
			sameImages, sameMasks := true, true
			for _, rel := range images {
				img := decoded[rel]
				var buf bytes.Buffer
				if err := encImage(&buf, img); err != nil {
					t.Fatalf("%s: %v", rel, err)
				}
				if !samePixels(t, rel, img, buf.Bytes()) {
					t.Fatalf("%s: the pixels differ from the reference build's", rel)
				}
				if tc.value == buildcfg.FastPNG && !bytes.Equal(files[rel], buf.Bytes()) {
					t.Errorf("%s: the fast encoder's bytes differ from the fast build's file", rel)
				}
				sameImages = sameImages && bytes.Equal(defaults[rel], buf.Bytes())
				if tc.value == buildcfg.StandardPNG && rel == images[0] {
					var std bytes.Buffer
					if err := (&png.Encoder{}).Encode(&std, img); err != nil || !bytes.Equal(std.Bytes(), buf.Bytes()) {
						t.Errorf("%s is not image/png's default-level encoding (%v)", rel, err)
					}
				}
			}
			for _, rel := range masks {
				var buf bytes.Buffer
				if err := encMask(&buf, maskOf[rel]); err != nil {
					t.Fatalf("%s: %v", rel, err)
				}
				if !samePixels(t, rel, decoded[rel], buf.Bytes()) {
					t.Fatalf("%s: the pixels differ from the reference build's", rel)
				}
				if tc.value == buildcfg.FastPNG && !bytes.Equal(files[rel], buf.Bytes()) {
					t.Errorf("%s: the fast encoder's bytes differ from the fast build's file", rel)
				}
				sameMasks = sameMasks && bytes.Equal(defaults[rel], buf.Bytes())
			}
			if sameImages != tc.sameImages || sameMasks != tc.sameMasks {
				t.Errorf("bytes equal to the default value's: images %v, masks %v; want %v, %v", sameImages, sameMasks, tc.sameImages, tc.sameMasks)
			}
		})
	}
}

// spread keeps at most n of the names, evenly spaced, first and last
// included.
func spread(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	out := make([]string, n)
	for i := range out {
		out[i] = names[i*(len(names)-1)/(n-1)]
	}
	return out
}

// pngFiles reads every PNG under a built benchmark's chexpercept/ and
// masks/ folders, by slash path relative to the benchmark.
func pngFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := outdirtest.ReadFiles(t, dir)
	for rel := range files {
		top, _, _ := strings.Cut(rel, "/")
		if (top != imagesDir && top != masksDir) || path.Ext(rel) != ".png" {
			delete(files, rel)
		}
	}
	return files
}

// samePixels decodes a PNG with image/png and compares its pixels with
// those of ia (decoded by image/png too).
func samePixels(t *testing.T, name string, ia image.Image, b []byte) bool {
	t.Helper()
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if ia.Bounds() != ib.Bounds() || fmt.Sprintf("%T", ia) != fmt.Sprintf("%T", ib) {
		return false
	}
	switch x := ia.(type) {
	case *image.RGBA:
		return bytes.Equal(x.Pix, ib.(*image.RGBA).Pix)
	case *image.Gray:
		return bytes.Equal(x.Pix, ib.(*image.Gray).Pix)
	}
	t.Fatalf("%s: decoded as %T", name, ia)
	return false
}
