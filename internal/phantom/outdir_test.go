package phantom

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
)

const legacyLine = `{"case_id":"ph0001_positive_0","lesion":"atelectasis","label":"positive","image":"images/ph0001.png","image_id":"ph0001"}` + "\n"

func TestCheckOutDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string // relative path → content ("/" suffix: directory)
		ok    bool
	}{
		{"missing", nil, true},
		{"empty", map[string]string{}, true},
		{"marked phantom set", map[string]string{MarkerName: markerText, "images/": ""}, true},
		{"interrupted phantom run", map[string]string{MarkerName: markerText, "images/ph0001.png": "x"}, true},
		{"phantom set without marker", map[string]string{"manifest.jsonl": legacyLine, "images/": ""}, true},
		{"built benchmark", map[string]string{"chexpercept.json": "{}", "masks/": "", "SHA256SUMS": ""}, false},
		{"foreign manifest", map[string]string{"manifest.jsonl": `{"case_id":"p1","image":"images/a.png","image_id":"a"}` + "\n"}, false},
		{"manifest not JSON", map[string]string{"manifest.jsonl": "case_id,image\n"}, false},
		{"just images and masks", map[string]string{"images/": "", "masks/": ""}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if tc.files != nil {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for rel, content := range tc.files {
				p := filepath.Join(dir, rel)
				if strings.HasSuffix(rel, "/") {
					if err := os.MkdirAll(p, 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := checkOutDir(dir)
			if tc.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), dir+" is not empty") || strings.Contains(err.Error(), "\n")) {
				t.Errorf("err = %v, want a one-line refusal naming %s", err, dir)
			}
		})
	}
}

// TestGenerateRefusesForeignDirectory runs Generate into a built
// benchmark's directory: it must fail and leave the directory untouched.
func TestGenerateRefusesForeignDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "chexpercept.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(context.Background(), Options{OutDir: dir, CasesPerLesion: 1, Workers: 1})
	if err == nil || !strings.Contains(err.Error(), "is not empty and was not made by chexpercept phantom") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("Generate wrote into the refused directory: %d entries", len(ents))
	}
}

// TestGenerateRerunsIntoPhantomSet regenerates into a finished set: the
// marker lets it through and the output is the same. The temporary files
// a run killed while renaming its files into place left are removed; a
// file that only looks like one (not "<phantom file>.tmp-<digits>") stays.
// Two lesions (four cases) are enough for that: the rerun rules do not
// depend on the lesion, and TestSameSeedSameBytesAnyWorkers holds all
// seven to the same bytes.
func TestGenerateRerunsIntoPhantomSet(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("generates 4 cases twice")
	}
	opt := Options{CasesPerLesion: 1, Seed: 9, Workers: 2, Lesions: twoLesions()}
	dir, _ := generateOpt(t, opt)
	if _, err := os.Stat(filepath.Join(dir, MarkerName)); err != nil {
		t.Fatalf("no marker: %v", err)
	}
	before := outdirtest.ReadFiles(t, dir)
	debris := []string{"images/ph0001.png.tmp-3407181446", "masks/ph0002_heart.png.tmp-12", "manifest.jsonl.tmp-7", "contact_sheet.png.tmp-99", MarkerName + ".tmp-5"}
	foreign := []string{"notes.txt.tmp-1", "images/ph0001.png.tmp-abc", "masks/x.png.tmp-", "other/y.png.tmp-4"}
	for _, rel := range append(slices.Clone(debris), foreign...) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opt.OutDir = dir
	if _, err := Generate(context.Background(), opt); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	for _, rel := range debris {
		if _, err := os.Lstat(filepath.Join(dir, rel)); err == nil {
			t.Errorf("the rerun left %s, the temporary file of a killed run", rel)
		}
	}
	for _, rel := range foreign {
		if b, err := os.ReadFile(filepath.Join(dir, rel)); err != nil || string(b) != "half" {
			t.Errorf("the rerun removed or changed %s, which is not its temporary file (%v)", rel, err)
		}
		_ = os.Remove(filepath.Join(dir, rel))
	}
	_ = os.Remove(filepath.Join(dir, "other"))
	after := outdirtest.ReadFiles(t, dir)
	if len(after) != len(before) {
		t.Fatalf("rerun changed the file count: %d → %d", len(before), len(after))
	}
	for p, b := range before {
		if string(after[p]) != string(b) {
			t.Errorf("%s changed on rerun", p)
		}
	}
}

// TestGenerateFewerCasesRemovesEarlierOnes: a set rewritten with fewer
// cases keeps none of the earlier cases' images and masks (its manifest
// would not name them), and keeps a file the earlier run did not write.
// Two lesions at the fastest PNG level: which files are kept does not
// depend on the lesion or on the bytes of the images.
func TestGenerateFewerCasesRemovesEarlierOnes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("generates 12 cases")
	}
	dir, first := generateOpt(t, Options{CasesPerLesion: 2, Seed: 9, Workers: 2, FastPNG: true, Lesions: twoLesions()})
	if err := os.WriteFile(filepath.Join(dir, "images", "mine.png"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := Generate(context.Background(), Options{OutDir: dir, CasesPerLesion: 1, Seed: 9, Workers: 2, FastPNG: true, Lesions: twoLesions()})
	if err != nil {
		t.Fatalf("rerun: %v", err)
	}
	images, err := os.ReadDir(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != sum.Cases+1 || sum.Cases >= first.Cases {
		t.Errorf("images/ holds %d files after %d cases were rewritten as %d, want %d and mine.png", len(images), first.Cases, sum.Cases, sum.Cases)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "images", "mine.png")); err != nil || string(b) != "mine" {
		t.Errorf("mine.png: %q, %v", b, err)
	}
}

// twoLesions are the first two built-in lesions, for the tests of how
// Generate treats its output directory.
func twoLesions() []benchmark.LesionDef {
	return benchmark.DefaultLesionDefs()[:2]
}
