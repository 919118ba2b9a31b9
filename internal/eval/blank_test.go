package eval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/draw"
	"io"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/build"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/phantom"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
)

// builtBench builds a small phantom benchmark with the builder (one RF
// and one RR record of a lung lesion and of the heart-type lesion), whose
// masks/ folder holds the masks its images were drawn from.
func builtBench(t *testing.T) *benchmark.Benchmark {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a phantom benchmark; skipped with -short")
	}
	dir := t.TempDir()
	var defs []benchmark.LesionDef
	for _, name := range []string{"effusion", "cardiomegaly"} {
		d, _ := benchmark.DefaultLesions().Def(name)
		defs = append(defs, d)
	}
	sum, err := phantom.Generate(context.Background(), phantom.Options{OutDir: filepath.Join(dir, "phantom"), CasesPerLesion: 3, Negatives: 1,
		Seed: 1, FastPNG: true, Progress: io.Discard, Lesions: defs})
	if err != nil {
		t.Fatal(err)
	}
	cfg := buildcfg.Default()
	cfg.Lesions = []string{"effusion", "cardiomegaly"}
	cfg.LF, cfg.RF, cfg.RR = 1, 1, 1
	// The fastest PNG level: the same pixels, which are what the tests
	// compare, at a fraction of the deflate time.
	cfg.BundlePNGCompression = buildcfg.FastPNG
	out := filepath.Join(dir, "bench")
	if _, err := build.Run(context.Background(), build.Options{Source: sum.Manifest, Out: out, Config: cfg,
		Decisions: reviewlog.AcceptAll{}, ReviewMode: build.ModeAcceptAll, Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	b, err := benchdir.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeRGBA(t *testing.T, data []byte) *image.RGBA {
	t.Helper()
	img, err := imagefile.DecodePNG(data)
	if err != nil {
		t.Fatal(err)
	}
	out := image.NewRGBA(image.Rect(0, 0, img.Bounds().Dx(), img.Bounds().Dy()))
	draw.Draw(out, out.Bounds(), img, img.Bounds().Min, draw.Src)
	return out
}

// unionMask is the union of the builder's masks of the given names
// (masks/<key_id>/<name>.png); ok is false when one has no file (a
// default token such as a lung).
func unionMask(t *testing.T, bench *benchmark.Benchmark, key string, names []string) (mask.Mask, bool) {
	t.Helper()
	var u mask.Mask
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(bench.Dir, "masks", key, n+".png"))
		if err != nil {
			return u, false
		}
		img := decodeRGBA(t, data)
		if u.Pix == nil {
			u = mask.New(img.Bounds().Dx(), img.Bounds().Dy())
		}
		for i := range u.Pix {
			if img.Pix[4*i] != 0 {
				u.Pix[i] = 1
			}
		}
	}
	return u, u.Pix != nil
}

// TestBlankRadiographImages checks the blank-radiograph control's images
// against the benchmark's own rendering: no pixel of the radiograph
// survives (every pixel is the mean grey, its overlay, or a disc drawn
// from the record's points), and every drawn element does — the overlay
// covers exactly the pixels where the builder's image differs from its
// radiograph, which are the pixels of the builder's masks, and the
// points image holds the record's discs, drawn as the builder draws them.
func TestBlankRadiographImages(t *testing.T) {
	t.Parallel()
	bench := builtBench(t)
	seenRR, checkedMasks := 0, 0
	for _, rec := range bench.Records {
		plan, err := protocol.Plan(rec, bench.Dir)
		if err != nil {
			t.Fatal(err)
		}
		rels := protocol.ImagesToSend(plan)
		hashes := map[string]verified{}
		for _, rel := range rels {
			hashes[rel] = verified{sha: sha256Hex(readFile(t, filepath.Join(bench.Dir, filepath.FromSlash(rel))))}
		}
		src := newImageSource("blank-radiograph", rec, bench.Dir, &recordImages{hashes: hashes})
		dir := benchmark.RecordDir(rec.KeyID)
		xray := decodeRGBA(t, readFile(t, filepath.Join(bench.Dir, filepath.FromSlash(path.Join(dir, benchmark.XrayRel)))))
		var sum, n int
		for i := 0; i < len(xray.Pix); i += 4 {
			sum += int(xray.Pix[i]) + int(xray.Pix[i+1]) + int(xray.Pix[i+2])
			n += 3
		}
		g := uint8((2*sum + n) / (2 * n))
		grey := [4]uint8{g, g, g, 255}
		ov := render.OverlayValue(g)
		over := [4]uint8{ov.R, ov.G, ov.B, 255}
		pointsRel := path.Join(dir, benchmark.PointsRel)
		for _, rel := range rels {
			im, err := src.image(rel)
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			blank := decodeRGBA(t, im.PNG)
			orig := decodeRGBA(t, readFile(t, filepath.Join(bench.Dir, filepath.FromSlash(rel))))
			if rel == pointsRel {
				seenRR++
				// The builder's points image: its before-mask overlay and
				// the discs. Drawn again over the uniform grey from the
				// builder's masks, it must equal the control's image.
				m, ok := unionMask(t, bench, rec.KeyID, rec.Contour.RevisionBeforeMasks)
				if !ok {
					t.Fatalf("%s: the builder wrote no masks for %v", rec.KeyID, rec.Contour.RevisionBeforeMasks)
				}
				want := render.Overlay(uniform(g, blank.Bounds()), m)
				if err := render.DrawPoints(want, rec.Contour.Expansion.AnswerOptions); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(want.Pix, blank.Pix) {
					t.Errorf("%s: the points image is not the builder's overlay and discs over the mean grey", rel)
				}
				for _, o := range rec.Contour.Expansion.AnswerOptions {
					if o.Point == nil {
						continue
					}
					c, _ := render.PaletteColour(o.Color)
					px := blank.Pix[blank.PixOffset(o.Point[0], o.Point[1]):]
					if px[0] != c.R || px[1] != c.G || px[2] != c.B {
						t.Errorf("%s: the %s point's disc is not drawn at %v", rel, o.Color, o.Point)
					}
				}
				continue
			}
			// Every other image: the mean grey where the builder's image
			// shows the radiograph, its overlay where it shows a mask.
			drawn := mask.New(blank.Bounds().Dx(), blank.Bounds().Dy())
			for i := range drawn.Pix {
				j := 4 * i
				want := grey
				if !bytes.Equal(orig.Pix[j:j+3], xray.Pix[j:j+3]) {
					want, drawn.Pix[i] = over, 1
				}
				if !bytes.Equal(blank.Pix[j:j+4], want[:]) {
					t.Fatalf("%s: pixel %d is %v, want %v (the builder's %v over the radiograph's %v)", rel, i, blank.Pix[j:j+4], want, orig.Pix[j:j+4], xray.Pix[j:j+4])
				}
			}
			// The drawn pixels are the builder's masks where it wrote them.
			var names []string
			switch {
			case rec.Contour == nil || rel == path.Join(dir, benchmark.XrayRel):
			case rec.Contour.NoDeformation && rel != path.Join(dir, benchmark.XrayRel):
				names = rec.Contour.RevisionAfterMasks
			default:
				names = rec.Contour.RevisionBeforeMasks
				for k, o := range rec.Contour.RevisionResult.AnswerOptions {
					if p, _ := rec.OptionPath(k + 1); rel == path.Join(dir, p) {
						names = o.Masks
					}
				}
			}
			if rel == path.Join(dir, benchmark.XrayRel) {
				if !bytes.Equal(drawn.Pix, make([]uint8, len(drawn.Pix))) {
					t.Errorf("%s: the radiograph differs from itself", rel)
				}
				continue
			}
			if m, ok := unionMask(t, bench, rec.KeyID, names); ok {
				checkedMasks++
				if !bytes.Equal(m.Pix, drawn.Pix) {
					t.Errorf("%s: the drawn pixels are not the builder's masks %v", rel, names)
				}
			}
		}
	}
	if seenRR == 0 || checkedMasks < 3 {
		t.Fatalf("%d points images and %d images checked against the builder's masks: the fixture proves too little", seenRR, checkedMasks)
	}
}

// uniform is an image of one grey.
func uniform(g uint8, r image.Rectangle) *image.Gray {
	img := image.NewGray(r)
	for i := range img.Pix {
		img.Pix[i] = g
	}
	return img
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
