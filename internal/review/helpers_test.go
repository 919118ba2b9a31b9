package review

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/source"
)

// fixture is a small hand-made source: per lesion nPos positives and nNeg
// negatives with generated 64×64 PNGs (the canonical frame resizes them).
type fixture struct {
	Dir      string
	Manifest string
	Cases    []*source.Case
}

func writePNG(t testing.TB, path string, img image.Image) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func makeFixture(t testing.TB, lesions []string, nPos, nNeg int) *fixture {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "img"), 0o755)
	var lines []string
	k := 0
	for _, les := range lesions {
		for _, label := range []string{"positive", "negative"} {
			n := nPos
			if label == "negative" {
				n = nNeg
			}
			for i := 0; i < n; i++ {
				k++
				stem := fmt.Sprintf("fx%03d", k)
				g := image.NewGray(image.Rect(0, 0, 64, 64))
				for p := range g.Pix {
					g.Pix[p] = uint8((p*7 + k*31) % 256)
				}
				img := "img/" + stem + ".png"
				writePNG(t, filepath.Join(dir, img), g)
				line := fmt.Sprintf(`{"case_id":"%s_%s_0","lesion":"%s","label":"%s","image":"%s","image_id":"%s","report":"Report of %s, with a comma."`,
					stem, label, les, label, img, stem, stem)
				if label == "positive" {
					m := image.NewGray(image.Rect(0, 0, 32, 32))
					for y := 8; y < 8+4+k%8; y++ {
						for x := 10; x < 20; x++ {
							m.Pix[y*32+x] = 255
						}
					}
					mp := "img/" + stem + "_mask.png"
					writePNG(t, filepath.Join(dir, mp), m)
					line += fmt.Sprintf(`,"lesion_masks":["%s"],"lung_masks":{"right":"%s","left":"%s"},"location_hints":["left lower lobe","left lower lobe","right, upper"]`, mp, mp, mp)
				}
				lines = append(lines, line+"}")
			}
		}
	}
	man := filepath.Join(dir, "manifest.jsonl")
	if err := os.WriteFile(man, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, _, err := source.ReadSource(man, buildcfg.Default())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{Dir: dir, Manifest: man, Cases: cases}
}

// fixedClock makes store timestamps deterministic: each call advances one
// second from 2026-01-02T03:04:05Z.
func fixedClock(s *Store) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var n atomic.Int64
	s.now = func() time.Time { return t0.Add(time.Duration(n.Add(1)-1) * time.Second) }
}

// initStore creates a review database for the fixture and returns the
// open store and the credentials by name.
func initStore(t testing.TB, fx *fixture, n, k int) (*Store, map[string]string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "review.db")
	creds, _, err := Init(path, fx.Cases, InitOptions{Reviewers: n, Overlap: k, Seed: 7, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	fixedClock(s)
	tok := map[string]string{}
	for _, c := range creds {
		tok[c.Name] = c.Token
	}
	return s, tok
}

func defaultCfg() buildcfg.Config { return buildcfg.Default() }
