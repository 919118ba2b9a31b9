package eval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/draw"
	"path"
	"path/filepath"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/results"
)

// Image controls (results.Control) change what a record's calls carry,
// never their texts: the runner asks a record's image source for each
// image a message names, and a control run's source answers in the
// benchmark image's stead. Everything else — the plan, the verification
// of the benchmark's files, the turns, the oracle, the parsing — is the
// model run's, so the two runs answer the same questions on the same
// records and their answers can be paired.

// imageSource gives the images a record's messages carry.
type imageSource interface {
	// image is what is sent for the benchmark image rel (a path relative
	// to the benchmark directory, verified before the record's first
	// call); nil means nothing is sent in its place.
	image(rel string) (*provider.Image, error)
}

// textOnly is the source of the text-only control: no image at all.
type textOnly struct{}

func (textOnly) image(string) (*provider.Image, error) { return nil, nil }

// newImageSource is the source of a record's images under control c:
// the benchmark's files (imgs), none, or their blank-radiograph
// renderings.
func newImageSource(c results.Control, rec *benchmark.Record, benchDir string, imgs *recordImages) imageSource {
	switch c {
	case results.ControlTextOnly:
		return textOnly{}
	case results.ControlBlankRadiograph:
		return &blankImages{rec: rec, benchDir: benchDir, hashes: imgs.hashes, got: map[string]*provider.Image{}}
	}
	return imgs
}

// blankImages is the source of the blank-radiograph control: each of a
// record's images re-rendered with the project's own drawing code
// (package render, as the builder draws them, build.md §11) over a
// uniform image of the radiograph's mean grey, so that every drawn
// element stays where it was and nothing of the anatomy remains.
//
// The masks come from the benchmark's images themselves: the overlay of
// format.md §1.1 changes every pixel it covers (inside the mask a grey v
// becomes (v div 2, (v + 255) div 2, …), never (v, v, v)), so a drawn
// image differs from xray.png exactly on its mask. That holds for any
// benchmark in the format, including one whose masks are not shipped,
// and it shows the model the very mask the real run showed. The points
// image's mask is the contour-evaluation image's (both show the record's
// mask before revision, format.md §1.1); its discs are drawn again from
// the record's point options.
type blankImages struct {
	rec      *benchmark.Record
	benchDir string
	hashes   map[string]verified
	got      map[string]*provider.Image

	xray *image.RGBA // the radiograph as decoded, once the first image is asked
	grey *image.Gray // the uniform image of its mean grey
	eval *mask.Mask  // the contour-evaluation image's mask, once read
}

func (b *blankImages) image(rel string) (*provider.Image, error) {
	if im, ok := b.got[rel]; ok {
		return im, nil
	}
	img, err := b.render(rel)
	if err != nil {
		return nil, fmt.Errorf("blank-radiograph control: %w", err)
	}
	var buf bytes.Buffer
	if err := render.EncodeBundlePNG(&buf, img); err != nil {
		return nil, fmt.Errorf("blank-radiograph control: image %s: %w", rel, err)
	}
	im := provider.NewImage(buf.Bytes())
	b.got[rel] = im
	return im, nil
}

// render draws the blank-radiograph version of the benchmark image rel.
func (b *blankImages) render(rel string) (*image.RGBA, error) {
	dir := benchmark.RecordDir(b.rec.KeyID)
	if err := b.loadXray(path.Join(dir, benchmark.XrayRel)); err != nil {
		return nil, err
	}
	evalRel := ""
	if b.rec.Contour != nil {
		p, err := b.rec.ContourEvalPath()
		if err != nil {
			return nil, err
		}
		evalRel = path.Join(dir, p)
	}
	switch {
	case rel == path.Join(dir, benchmark.XrayRel):
		return render.Gray2RGB(b.grey), nil
	case rel == evalRel:
		m, err := b.evalMask(evalRel)
		if err != nil {
			return nil, err
		}
		return render.Overlay(b.grey, *m), nil
	case b.rec.Contour != nil && rel == path.Join(dir, benchmark.PointsRel):
		if evalRel == "" {
			return nil, fmt.Errorf("record %s: the points image has no contour-evaluation image to take its mask from", b.rec.KeyID)
		}
		m, err := b.evalMask(evalRel)
		if err != nil {
			return nil, err
		}
		img := render.Overlay(b.grey, *m)
		if err := render.DrawPoints(img, b.rec.Contour.Expansion.AnswerOptions); err != nil {
			return nil, err
		}
		return img, nil
	}
	if b.rec.Contour != nil {
		for k := range b.rec.Contour.RevisionResult.AnswerOptions {
			p, err := b.rec.OptionPath(k + 1)
			if err != nil {
				return nil, err
			}
			if rel == path.Join(dir, p) {
				m, err := b.drawnMask(rel)
				if err != nil {
					return nil, err
				}
				return render.Overlay(b.grey, m), nil
			}
		}
	}
	return nil, fmt.Errorf("record %s: image %s is none of the record's images", b.rec.KeyID, rel)
}

// loadXray decodes the record's radiograph and makes the uniform image
// of its mean grey (the mean of (R + G + B) / 3 over its pixels,
// rounded half up).
func (b *blankImages) loadXray(rel string) error {
	if b.xray != nil {
		return nil
	}
	x, err := b.decode(rel)
	if err != nil {
		return err
	}
	var sum uint64
	px := x.Pix
	for i := 0; i+3 < len(px); i += 4 {
		sum += uint64(px[i]) + uint64(px[i+1]) + uint64(px[i+2])
	}
	n := uint64(3 * x.Bounds().Dx() * x.Bounds().Dy())
	v := uint8((2*sum + n) / (2 * n))
	g := image.NewGray(x.Bounds())
	for i := range g.Pix {
		g.Pix[i] = v
	}
	b.xray, b.grey = x, g
	return nil
}

// evalMask is the contour-evaluation image's mask, read once.
func (b *blankImages) evalMask(rel string) (*mask.Mask, error) {
	if b.eval == nil {
		m, err := b.drawnMask(rel)
		if err != nil {
			return nil, err
		}
		b.eval = &m
	}
	return b.eval, nil
}

// drawnMask is the set of pixels where the benchmark image rel differs
// from the radiograph: the mask drawn on it.
func (b *blankImages) drawnMask(rel string) (mask.Mask, error) {
	img, err := b.decode(rel)
	if err != nil {
		return mask.Mask{}, err
	}
	w, h := b.xray.Bounds().Dx(), b.xray.Bounds().Dy()
	if img.Bounds().Dx() != w || img.Bounds().Dy() != h {
		return mask.Mask{}, fmt.Errorf("image %s is %dx%d, its radiograph %dx%d", rel, img.Bounds().Dx(), img.Bounds().Dy(), w, h)
	}
	m := mask.New(w, h)
	a, x := img.Pix, b.xray.Pix
	for i := range m.Pix {
		j := 4 * i
		if a[j] != x[j] || a[j+1] != x[j+1] || a[j+2] != x[j+2] {
			m.Pix[i] = 1
		}
	}
	return m, nil
}

// decode reads the benchmark image rel, checks that it still has the
// content verified before the record's first call, and decodes it into
// RGBA pixels (an RGBA file's alpha is 255 everywhere in a valid
// benchmark, format.md §1.1).
func (b *blankImages) decode(rel string) (*image.RGBA, error) {
	v, ok := b.hashes[rel]
	if !ok || v.sha == "" {
		return nil, fmt.Errorf("image %s was not verified before its record's first call", rel)
	}
	data, err := readBenchFile(filepath.Join(b.benchDir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", rel, err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != v.sha {
		return nil, fmt.Errorf("image %s changed on disk after it was verified", rel)
	}
	img, err := imagefile.DecodePNG(data)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", rel, err)
	}
	bd := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, bd.Dx(), bd.Dy()))
	draw.Draw(out, out.Bounds(), img, bd.Min, draw.Src)
	return out, nil
}
