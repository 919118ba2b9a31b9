package review

import (
	"bytes"
	"context"
	"encoding/csv"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/source"
)

func TestAnnotatorName(t *testing.T) {
	for i, want := range map[int]string{0: "A", 1: "B", 25: "Z", 26: "AA", 27: "AB", 51: "AZ", 52: "BA", 701: "ZZ", 702: "AAA"} {
		if got := AnnotatorName(i); got != "annotator_"+want {
			t.Errorf("%d: %s, want annotator_%s", i, got, want)
		}
	}
}

func readSheetRows(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("\r\n")) || bytes.Contains(bytes.ReplaceAll(data, []byte("\r\n"), nil), []byte("\n")) {
		t.Errorf("%s: rows must end in \\r\\n", path)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestPack(t *testing.T) {
	t.Parallel()
	fx := makeFixture(t, []string{"edema"}, 3, 2)
	out := filepath.Join(t.TempDir(), "packs")
	sum, err := Pack(context.Background(), fx.Cases, out, PackOptions{Reviewers: 2, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cases != 5 || sum.Skipped != 0 || sum.Sheets != 4 {
		t.Errorf("summary %+v", sum)
	}
	// Round robin within lesion and label: positives 0,2 → A, 1 → B;
	// negatives 0 → A, 1 → B.
	want := map[string][]int{
		"annotator_A/edema/positive": {0, 2}, "annotator_B/edema/positive": {1},
		"annotator_A/edema/negative": {3}, "annotator_B/edema/negative": {4},
	}
	l, _ := source.NewLoader(nil, nil, defaultCfg(), "", nil)
	for dir, idx := range want {
		rows := readSheetRows(t, filepath.Join(out, dir, "review_sheet.csv"))
		if strings.Join(rows[0], ",") != strings.Join(ReviewSheetHeader, ",") {
			t.Errorf("%s header %v", dir, rows[0])
		}
		if len(rows) != len(idx)+1 {
			t.Fatalf("%s: %d rows, want %d", dir, len(rows)-1, len(idx))
		}
		for j, i := range idx {
			c := fx.Cases[i]
			row := rows[j+1]
			img, _ := source.ImageSHA256(c)
			wantMask, wantHints := "", ""
			gray, _ := frame.LoadGray(c.Image)
			var wantImg image.Image = gray
			if c.Positive() {
				m, _ := l.CandidateMask(c)
				wantMask = source.MaskSHA256(m)
				wantHints = "left lower lobe; left lower lobe; right, upper"
				wantImg = render.ReviewImage(gray, m)
			}
			exp := []string{c.KeyID(), "edema", c.Label, img, wantMask, wantHints, "Report of " + c.CaseID[:5] + ", with a comma.", ""}
			if strings.Join(row, "|") != strings.Join(exp, "|") {
				t.Errorf("%s row %d:\n got %q\nwant %q", dir, j, row, exp)
			}
			f, err := os.Open(filepath.Join(out, dir, c.KeyID()+".png"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := png.Decode(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got.Bounds() != wantImg.Bounds() {
				t.Fatalf("%s: image %v, want %v", c.KeyID(), got.Bounds(), wantImg.Bounds())
			}
			if c.Positive() && got.Bounds().Dx() != 2048 {
				t.Errorf("positive review image width %d", got.Bounds().Dx())
			}
			for _, p := range []image.Point{{0, 0}, {300, 200}, {1024 + 330, 300}, {2047, 1023}, {700, 900}} {
				if !p.In(got.Bounds()) {
					continue
				}
				r1, g1, b1, _ := got.At(p.X, p.Y).RGBA()
				r2, g2, b2, _ := wantImg.At(p.X, p.Y).RGBA()
				if r1 != r2 || g1 != g2 || b1 != b2 {
					t.Errorf("%s pixel %v differs", c.KeyID(), p)
				}
			}
		}
	}
	// The red overlay is really there: a pixel inside the mask on the
	// right half is red-shifted.
	f, _ := os.Open(filepath.Join(out, "annotator_A/edema/positive", fx.Cases[0].KeyID()+".png"))
	img, _ := png.Decode(f)
	f.Close()
	r, g, _, _ := img.At(1024+15*32, 9*32+16).RGBA()
	if r <= g {
		t.Errorf("no red overlay inside the mask: r=%d g=%d", r>>8, g>>8)
	}
	// A second pack into the same folder, or a pack into a file or a
	// dangling link, is refused with one line and changes nothing.
	tmp := t.TempDir()
	file, dangling := filepath.Join(tmp, "file"), filepath.Join(tmp, "dangling")
	os.WriteFile(file, []byte("x"), 0o644)
	os.Symlink(filepath.Join(tmp, "nowhere"), dangling)
	for dir, want := range map[string]string{out: `holds a finished review pack`, file: "is not a directory", dangling: "does not lead to a directory"} {
		before, beforeTmp := outdirtest.Snapshot(t, out), outdirtest.Snapshot(t, tmp)
		_, err := Pack(context.Background(), fx.Cases, dir, PackOptions{Reviewers: 2})
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("pack into %s: %v, want %q", dir, err, want)
		}
		outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, out))
		outdirtest.Unchanged(t, beforeTmp, outdirtest.Snapshot(t, tmp))
	}
	if _, err := Pack(context.Background(), fx.Cases, filepath.Join(t.TempDir(), "x"), PackOptions{Reviewers: 0}); err == nil {
		t.Error("0 reviewers accepted")
	}
}

// TestPackRerun: a pack that stopped part-way (a failed write, a signal, a
// kill) carries its marker saying unfinished, and the plain rerun
// replaces it with the whole pack, whatever the earlier attempt left;
// a finished pack, a folder without the marker and an unfinished pack
// holding what a pack does not write are refused and left as they are.
func TestPackRerun(t *testing.T) {
	t.Parallel()
	fx := makeFixture(t, []string{"edema"}, 3, 2)
	want := filepath.Join(t.TempDir(), "want")
	if _, err := Pack(context.Background(), fx.Cases, want, PackOptions{Reviewers: 2, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	wantFiles := outdirtest.ReadFiles(t, want)
	sheetA := "annotator_A/edema/positive/review_sheet.csv"
	imgB := "annotator_B/edema/negative/" + fx.Cases[4].KeyID() + ".png"
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string) // changes a finished pack
		refused string                         // "" = the rerun completes the pack
	}{
		{"stopped before its last sheet", func(t *testing.T, dir string) {
			write(t, dir, PackMarker, packUnfinished)
			remove(t, dir, sheetA)
		}, ""},
		{"killed renaming an image", func(t *testing.T, dir string) {
			write(t, dir, PackMarker, packUnfinished)
			remove(t, dir, imgB)
			write(t, dir, imgB+".tmp-3407181446", "half")
		}, ""},
		{"killed rewriting its marker", func(t *testing.T, dir string) {
			write(t, dir, PackMarker, "chexpercept review pack: fin")
		}, ""},
		{"an earlier attempt with more reviewers", func(t *testing.T, dir string) {
			write(t, dir, PackMarker, packUnfinished)
			write(t, dir, "annotator_C/edema/positive/"+fx.Cases[0].KeyID()+".png", "old")
		}, ""},
		{"finished", func(t *testing.T, dir string) {}, "holds a finished review pack"},
		{"no marker", func(t *testing.T, dir string) { remove(t, dir, PackMarker) }, "not made by chexpercept review pack"},
		{"unfinished with a note", func(t *testing.T, dir string) {
			write(t, dir, PackMarker, packUnfinished)
			write(t, dir, "annotator_A/edema/notes.txt", "mine")
		}, "annotator_A/edema/notes.txt, which review pack does not write"},
		{"unfinished with a link", func(t *testing.T, dir string) {
			write(t, dir, PackMarker, packUnfinished)
			if err := os.Symlink(t.TempDir(), filepath.Join(dir, "annotator_B", "elsewhere")); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A copy of the finished pack: the same files as a second Pack
			// would write, without encoding its images again.
			dir := filepath.Join(t.TempDir(), "packs")
			outdirtest.CopyTree(t, want, dir)
			tc.prepare(t, dir)
			before := outdirtest.Snapshot(t, dir)
			_, err := Pack(context.Background(), fx.Cases, dir, PackOptions{Reviewers: 2, Workers: 2})
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("rerun: %v, want a one-line refusal naming %s: %q", err, dir, tc.refused)
				}
				outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, dir))
				return
			}
			if err != nil {
				t.Fatalf("plain rerun: %v", err)
			}
			got := outdirtest.ReadFiles(t, dir)
			for p, b := range wantFiles {
				if !bytes.Equal(got[p], b) {
					t.Errorf("%s differs from a pack written at once", p)
				}
			}
			for p := range got {
				if _, ok := wantFiles[p]; !ok {
					t.Errorf("the rerun left %s", p)
				}
			}
		})
	}
}

func write(t *testing.T, dir, rel, data string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, dir, rel string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
}
