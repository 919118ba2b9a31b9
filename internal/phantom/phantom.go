// Package phantom generates synthetic frontal chest radiographs with exact
// lung, heart and lesion masks, as a source for building and testing
// benchmarks without patient data.
//
// Each image is drawn as an attenuation map in the canonical 1024×1024
// frame (build.md §1; the patient's right lung on the image left): a
// cylindrical trunk of soft tissue with neck and shoulders, lungs that
// remove attenuation, mediastinum, a tilted-ellipse heart sitting on two
// parabolic hemidiaphragm domes, spine, ribs, clavicles, hilar vessels and
// a gastric bubble. Lesions add attenuation inside the lungs with the
// shape and texture typical of each of the seven findings. The map is
// turned into grey levels by an exposure curve that varies per case, plus
// quantum noise and film grain. Masks are the exact geometry used for
// drawing, so the heart mask touches both lung masks and every lesion
// component touches a lung (build.md §5).
//
// Every case draws from its own RNG labelled by the seed and the case id,
// so output bytes do not depend on the number of workers.
package phantom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/pngenc"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// Options configures Generate.
type Options struct {
	OutDir         string
	CasesPerLesion int // positives and, separately, negatives per lesion
	// Negatives, when positive, is the number of negatives per lesion
	// instead (the demo: a build needs fewer lesion-free cases).
	Negatives int
	Seed      uint64
	Workers   int       // ≤ 0 means runtime.NumCPU()
	Progress  io.Writer // optional: one line per progress step
	// FastPNG writes the PNGs through package pngenc at its fastest (the
	// demo): the same pixels in larger files, for about a quarter of the
	// CPU time of image/png's fastest level.
	FastPNG bool
	// Lesions are the lesions to generate, in manifest order, each with
	// its shape family (LesionDef.Phantom; Shapes lists them). Nil means
	// the built-in seven.
	Lesions []benchmark.LesionDef
	// Job is the command's job: it tracks the temporary files of the
	// writes (atomicfile). Nil tracks nothing.
	Job *job.Job
}

// Summary reports what Generate wrote.
type Summary struct {
	Cases     int // manifest lines (= images)
	Positives int
	Negatives int
	Files     int // PNG files written, contact sheet included
	Manifest  string
	Sheet     string
	SheetPer  int // cases shown per lesion and label on the contact sheet
}

// Manifest case order: lesions in the given order (nil: the built-in
// seven); within a lesion all positives, then all negatives. Image ids
// count up from 1 in that order.
func plan(lesions []benchmark.LesionDef, nPos, nNeg int) []caseSpec {
	if lesions == nil {
		lesions = benchmark.DefaultLesionDefs()
	}
	var specs []caseSpec
	k := 0
	for _, les := range lesions {
		for _, pos := range []bool{true, false} {
			n := nNeg
			if pos {
				n = nPos
			}
			for i := 0; i < n; i++ {
				k++
				id := fmt.Sprintf("ph%04d", k)
				label := "negative"
				if pos {
					label = "positive"
				}
				specs = append(specs, caseSpec{imageID: id, caseID: id + "_" + label + "_0", lesion: les.Name, shape: les.Phantom, positive: pos})
			}
		}
	}
	return specs
}

// manifestLine is one line of the generic JSONL manifest (build.md §2.4),
// fields in the order the phantom writes them.
type manifestLine struct {
	CaseID      string    `json:"case_id"`
	Lesion      string    `json:"lesion"`
	Label       string    `json:"label"`
	Image       string    `json:"image"`
	ImageID     string    `json:"image_id"`
	LesionMasks []string  `json:"lesion_masks,omitempty"`
	LungMasks   lungPaths `json:"lung_masks"`
	HeartMask   string    `json:"heart_mask"`
	Report      string    `json:"report"`
}

type lungPaths struct {
	Right string `json:"right"`
	Left  string `json:"left"`
}

func (cs caseSpec) line(report string) manifestLine {
	label := "negative"
	if cs.positive {
		label = "positive"
	}
	l := manifestLine{
		CaseID: cs.caseID, Lesion: cs.lesion, Label: label,
		Image: "images/" + cs.imageID + ".png", ImageID: cs.imageID,
		LungMasks: lungPaths{Right: "masks/" + cs.imageID + "_right_lung.png", Left: "masks/" + cs.imageID + "_left_lung.png"},
		HeartMask: "masks/" + cs.imageID + "_heart.png",
		Report:    report,
	}
	if cs.positive {
		l.LesionMasks = []string{"masks/" + cs.imageID + "_" + cs.lesion + ".png"}
	}
	return l
}

// sheetPerCell is how many cases per lesion and label the contact sheet
// shows at most.
const sheetPerCell = 4

// Generate writes the phantom set under opt.OutDir: images/, masks/,
// manifest.jsonl, contact_sheet.png and the MarkerName file. OutDir must
// be new, empty or an earlier phantom set.
func Generate(ctx context.Context, opt Options) (Summary, error) {
	var sum Summary
	if err := checkOptions(opt); err != nil {
		return sum, err
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	if err := prepareOutDir(opt.OutDir); err != nil {
		return sum, err
	}
	before, err := outdir.ListOwned(opt.OutDir, MarkerName, isPhantomFile)
	if err != nil {
		return sum, fmt.Errorf("phantom: %w", err)
	}
	specs := plan(opt.Lesions, opt.CasesPerLesion, negatives(opt))
	per := min(opt.CasesPerLesion, sheetPerCell)
	done, err := runCases(ctx, opt, workers, specs, per)
	if err != nil {
		return sum, err
	}
	if err := done.writeIndex(opt, specs, per, &sum); err != nil {
		return sum, err
	}
	// A set rewritten with fewer cases keeps none of the earlier cases'
	// images and masks.
	if err := outdir.FinishOwned(opt.Job, opt.OutDir, MarkerName, markerText, isPhantomFile, before); err != nil {
		return sum, fmt.Errorf("phantom: %w", err)
	}
	return sum, nil
}

// negatives is the number of negatives per lesion.
func negatives(opt Options) int {
	if opt.Negatives > 0 {
		return opt.Negatives
	}
	return opt.CasesPerLesion
}

func checkOptions(opt Options) error {
	if opt.OutDir == "" {
		return errors.New("phantom: no output directory given")
	}
	if opt.CasesPerLesion < 1 {
		return fmt.Errorf("phantom: cases per lesion must be at least 1, got %d", opt.CasesPerLesion)
	}
	if opt.CasesPerLesion > 99999 {
		return fmt.Errorf("phantom: cases per lesion %d is too large (max 99999)", opt.CasesPerLesion)
	}
	if opt.Negatives < 0 || opt.Negatives > opt.CasesPerLesion {
		return fmt.Errorf("phantom: negatives per lesion %d must lie in 1..%d (the cases per lesion), or 0 for as many", opt.Negatives, opt.CasesPerLesion)
	}
	if opt.Lesions != nil && len(opt.Lesions) == 0 {
		return errors.New("phantom: no lesions to generate")
	}
	seen := map[string]bool{}
	for _, d := range opt.Lesions {
		if seen[d.Name] {
			return fmt.Errorf("phantom: lesion %q is listed twice", textsafe.OneLine(d.Name))
		}
		seen[d.Name] = true
		if !benchmark.KeyIDPattern.MatchString(d.Name + "_x_positive_0") {
			return fmt.Errorf("phantom: %q is not a lesion name (lowercase letters and digits)", textsafe.OneLine(d.Name))
		}
		_, lung := lungShapes[d.Phantom]
		switch {
		case d.Phantom == "":
			return fmt.Errorf("phantom: lesion %q has no phantom shape (one of %s)", d.Name, strings.Join(Shapes(), ", "))
		case d.Heart() && d.Phantom != ShapeEnlargedHeart:
			return fmt.Errorf("phantom: lesion %q is heart-type; its phantom shape must be %s, not %q", d.Name, ShapeEnlargedHeart, textsafe.OneLine(d.Phantom))
		case !d.Heart() && !lung:
			return fmt.Errorf("phantom: lesion %q: phantom shape %q is not one of the lung shapes (%s)", d.Name, textsafe.OneLine(d.Phantom), strings.Join(Shapes()[1:], ", "))
		}
	}
	return nil
}

// prepareOutDir checks dir and creates it with images/ and masks/,
// writing the marker first, in place (outdir.WriteMarker), so that a
// half-written set is recognised as ours; in a set being rewritten it
// removes the temporary files a killed run left.
func prepareOutDir(dir string) error {
	if err := checkOutDir(dir); err != nil {
		return err
	}
	for _, d := range []string{dir, filepath.Join(dir, "images"), filepath.Join(dir, "masks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("phantom: create %s: %w", d, err)
		}
		if d == dir && !outdir.IsRegular(filepath.Join(d, MarkerName)) {
			if err := outdir.WriteMarker(filepath.Join(d, MarkerName), []byte(markerText)); err != nil {
				return fmt.Errorf("phantom: %w", err)
			}
		}
	}
	if err := outdir.RemoveStale(dir, isPhantomFile, MarkerName); err != nil {
		return fmt.Errorf("phantom: %w", err)
	}
	return nil
}

// isPhantomFile reports whether rel, a path in a phantom set, names a file
// Generate writes.
func isPhantomFile(rel string) bool {
	switch dir, name := path.Split(rel); dir {
	case "":
		return name == "manifest.jsonl" || name == "contact_sheet.png"
	case "images/", "masks/":
		return path.Ext(name) == ".png"
	}
	return false
}

// generated is what the workers keep of each case, indexed like the specs.
type generated struct {
	reports []string
	thumbs  []*image.RGBA // nil for cases not on the contact sheet
	files   []int
}

// runCases generates and writes every case on workers goroutines; the
// first error stops the rest.
func runCases(ctx context.Context, opt Options, workers int, specs []caseSpec, per int) (*generated, error) {
	g := &generated{reports: make([]string, len(specs)), thumbs: make([]*image.RGBA, len(specs)), files: make([]int, len(specs))}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	step := max(1, len(specs)/20)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newScratch()
			enc := newEncoder(opt.FastPNG)
			for i := range jobs {
				if ctx.Err() != nil {
					continue
				}
				if err := g.generateCase(opt, specs, i, per, s, enc); err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				done++
				if opt.Progress != nil && (done%step == 0 || done == len(specs)) {
					fmt.Fprintf(opt.Progress, "phantom: %d/%d cases\n", done, len(specs))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range specs {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("phantom: %w", err)
	}
	return g, nil
}

// generateCase draws case i, writes its image and masks, and keeps its
// report, file count and (if on the contact sheet) thumbnail.
func (g *generated) generateCase(opt Options, specs []caseSpec, i, per int, s *scratch, enc *encoder) error {
	cs := specs[i]
	cd, err := makeCase(opt.Seed, cs, s)
	if err != nil {
		return fmt.Errorf("phantom: %w", err)
	}
	n, err := enc.writeCase(opt.Job, opt.OutDir, cs, cd)
	if err != nil {
		return err
	}
	g.reports[i] = cd.report
	g.files[i] = n
	if onSheet(specs, i, per) {
		g.thumbs[i] = thumbnail(cd, cs)
	}
	return nil
}

// writeIndex writes the contact sheet, then the manifest, and fills sum.
func (g *generated) writeIndex(opt Options, specs []caseSpec, per int, sum *Summary) error {
	var man bytes.Buffer
	for i, cs := range specs {
		b, err := ojson.EncodeCompact(cs.line(g.reports[i]))
		if err != nil {
			return fmt.Errorf("phantom: manifest line for %s: %w", cs.caseID, err)
		}
		man.Write(b)
		man.WriteByte('\n')
		sum.Files += g.files[i]
		if cs.positive {
			sum.Positives++
		} else {
			sum.Negatives++
		}
	}
	sum.Cases = len(specs)
	sum.Manifest = filepath.Join(opt.OutDir, "manifest.jsonl")
	sum.Sheet = filepath.Join(opt.OutDir, "contact_sheet.png")
	sum.SheetPer = per
	enc := newEncoder(opt.FastPNG)
	sheet := contactSheet(specs, g.thumbs, per, opt.CasesPerLesion, negatives(opt), opt.Seed)
	var buf bytes.Buffer
	if err := enc.Encode(&buf, sheet); err != nil {
		return fmt.Errorf("phantom: encode contact sheet: %w", err)
	}
	if err := atomicfile.WriteFileNoSync(opt.Job, sum.Sheet, buf.Bytes()); err != nil {
		return err
	}
	sum.Files++
	return atomicfile.WriteFileNoSync(opt.Job, sum.Manifest, man.Bytes())
}

// encoder is png.Encoder with default compression and a reused buffer
// pool (one per worker), or for FastPNG package pngenc at its fastest
// (greyscale and opaque RGB images; anything else goes to png.Encoder at
// its fastest level).
type encoder struct {
	png.Encoder
	pool bufPool
	fast *pngenc.Encoder
}

func newEncoder(fast bool) *encoder {
	e := &encoder{}
	if fast {
		e.CompressionLevel = png.BestSpeed
		e.fast = &pngenc.Encoder{Fastest: true}
	}
	return e
}

type bufPool struct{ b *png.EncoderBuffer }

func (p *bufPool) Get() *png.EncoderBuffer  { return p.b }
func (p *bufPool) Put(b *png.EncoderBuffer) { p.b = b }

func (e *encoder) Encode(w io.Writer, m image.Image) error {
	if e.fast != nil {
		switch m := m.(type) {
		case *image.Gray:
			return e.fast.EncodeGray(w, m)
		case *image.RGBA:
			if err := e.fast.EncodeRGBA(w, m); !errors.Is(err, pngenc.ErrNotOpaque) {
				return err
			}
		}
	}
	e.BufferPool = &e.pool
	return e.Encoder.Encode(w, m)
}

// writeCase writes the image and masks of one case; it returns the number
// of files written.
func (e *encoder) writeCase(j *job.Job, dir string, cs caseSpec, cd *caseData) (int, error) {
	line := cs.line(cd.report)
	type out struct {
		rel    string
		pix    []uint8
		binary bool
	}
	outs := []out{
		{line.Image, cd.img, false},
		{line.LungMasks.Right, cd.right, true},
		{line.LungMasks.Left, cd.left, true},
		{line.HeartMask, cd.heart, true},
	}
	if cs.positive {
		outs = append(outs, out{line.LesionMasks[0], cd.lesion, true})
	}
	var buf bytes.Buffer
	pix := make([]uint8, npx)
	for _, o := range outs {
		src := o.pix
		if o.binary {
			for i, v := range o.pix {
				pix[i] = v * 255
			}
			src = pix
		}
		buf.Reset()
		g := &image.Gray{Pix: src, Stride: size, Rect: image.Rect(0, 0, size, size)}
		if err := e.Encode(&buf, g); err != nil {
			return 0, fmt.Errorf("phantom: encode %s: %w", o.rel, err)
		}
		if err := atomicfile.WriteFileNoSync(j, filepath.Join(dir, filepath.FromSlash(o.rel)), buf.Bytes()); err != nil {
			return 0, err
		}
	}
	return len(outs), nil
}
