package phantom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
)

// testCase is one generated case with its spec.
type testCase struct {
	cs caseSpec
	cd *caseData
}

var (
	casesOnce sync.Once
	cases     []testCase
	casesErr  error
)

// sampleCases generates, for two seeds, one positive and one negative case
// of every lesion (28 cases), once per test binary.
func sampleCases(t *testing.T) []testCase {
	t.Helper()
	casesOnce.Do(func() {
		// makeCase depends only on its seed and spec, so the cases are
		// made on two goroutines (each with its own scratch) and kept in
		// the order of the loops.
		type job struct {
			seed uint64
			cs   caseSpec
		}
		var jobs []job
		for _, seed := range []uint64{1, 2} {
			for _, cs := range plan(nil, 1, 1) {
				jobs = append(jobs, job{seed, cs})
			}
		}
		out := make([]testCase, len(jobs))
		errs := make([]error, len(jobs))
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := newScratch()
				for i := w; i < len(jobs); i += 2 {
					cd, err := makeCase(jobs[i].seed, jobs[i].cs, s)
					out[i], errs[i] = testCase{jobs[i].cs, cd}, err
				}
			}()
		}
		wg.Wait()
		if casesErr = errors.Join(errs...); casesErr == nil {
			cases = out
		}
	})
	if casesErr != nil {
		t.Fatal(casesErr)
	}
	return cases
}

func name(tc testCase) string {
	return fmt.Sprintf("%s/%s", tc.cs.lesion, tc.cs.caseID)
}

// meanOver is the mean grey value of img over the on pixels of m.
func meanOver(img []uint8, m []bool) (float64, int) {
	s, n := 0, 0
	for i, on := range m {
		if on {
			s += int(img[i])
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(s) / float64(n), n
}

func onOf(ms ...[]uint8) []bool {
	out := make([]bool, npx)
	for _, m := range ms {
		for i, v := range m {
			if v != 0 {
				out[i] = true
			}
		}
	}
	return out
}

// rowRange returns the first and last on pixel of row y of m.
func rowRange(m []uint8, y int) (int, int) {
	lo, hi := -1, -1
	for x := 0; x < size; x++ {
		if m[y*size+x] != 0 {
			if lo < 0 {
				lo = x
			}
			hi = x
		}
	}
	return lo, hi
}

func extent(m []uint8) (x0, y0, x1, y1 int) {
	x0, y0, x1, y1 = size, size, -1, -1
	for i, v := range m {
		if v != 0 {
			x, y := i%size, i/size
			x0, x1 = min(x0, x), max(x1, x)
			y0, y1 = min(y0, y), max(y1, y)
		}
	}
	return
}

func TestLungsDarkerThanHeartAndMediastinum(t *testing.T) {
	t.Parallel()
	for _, tc := range sampleCases(t) {
		cd := tc.cd
		lungMean, _ := meanOver(cd.img, onOf(cd.right, cd.left))
		heartMean, _ := meanOver(cd.img, onOf(cd.heart))
		// Upper mediastinum: between the lungs, above the heart.
		_, ly0, _, _ := extent(cd.right)
		_, hy0, _, _ := extent(cd.heart)
		med := make([]bool, npx)
		for y := ly0 + 80; y < hy0-10; y++ {
			_, rx1 := rowRange(cd.right, y)
			lx0, _ := rowRange(cd.left, y)
			if rx1 < 0 || lx0 < 0 {
				continue
			}
			for x := rx1 + 8; x <= lx0-8; x++ {
				med[y*size+x] = true
			}
		}
		medMean, n := meanOver(cd.img, med)
		if n < 2000 {
			t.Errorf("%s: mediastinum sample too small (%d px)", name(tc), n)
		}
		t.Logf("%s: lung %.1f, heart %.1f, mediastinum %.1f", name(tc), lungMean, heartMean, medMean)
		if lungMean+40 > heartMean || lungMean+40 > medMean {
			t.Errorf("%s: lung mean %.1f not clearly darker than heart %.1f and mediastinum %.1f", name(tc), lungMean, heartMean, medMean)
		}
	}
}

func TestLesionBrighterThanSurroundingLung(t *testing.T) {
	t.Parallel()
	tmp := make([]float32, npx)
	f := make([]float32, npx)
	for _, tc := range sampleCases(t) {
		cd := tc.cd
		if cd.lesion == nil || tc.cs.lesion == "cardiomegaly" {
			continue
		}
		lungs := onOf(cd.right, cd.left)
		// Ring: lung pixels within 30 px (box) of the lesion, not in it.
		maskToField(cd.lesion, f)
		boxBlur(f, tmp, 30)
		les := onOf(cd.lesion)
		ring := make([]bool, npx)
		for i := range ring {
			ring[i] = f[i] > 0 && lungs[i] && !les[i]
		}
		lm, _ := meanOver(cd.img, les)
		rm, n := meanOver(cd.img, ring)
		if n < 1000 {
			t.Errorf("%s: ring around lesion too small (%d px)", name(tc), n)
			continue
		}
		t.Logf("%s: lesion %.1f, ring %.1f", name(tc), lm, rm)
		if lm < rm+12 {
			t.Errorf("%s: lesion mean %.1f not brighter than surrounding lung %.1f", name(tc), lm, rm)
		}
	}
}

func TestEffusionTouchesLungBase(t *testing.T) {
	t.Parallel()
	seen := 0
	for _, tc := range sampleCases(t) {
		if tc.cs.lesion != "effusion" || !tc.cs.positive {
			continue
		}
		seen++
		cd := tc.cd
		// The effusion's side is the lung holding most of the mask.
		l := cd.right
		if overlap(cd.lesion, cd.left) > overlap(cd.lesion, cd.right) {
			l = cd.left
		}
		_, _, _, y1 := extent(l)
		in, all := 0, 0
		for y := y1 - 9; y <= y1; y++ {
			for x := 0; x < size; x++ {
				if l[y*size+x] != 0 {
					all++
					if cd.lesion[y*size+x] != 0 {
						in++
					}
				}
			}
		}
		if all == 0 || float64(in) < 0.9*float64(all) {
			t.Errorf("%s: effusion covers %d of %d pixels of the lung's lowest 10 rows", name(tc), in, all)
		}
		// Meniscus: the fluid reaches higher at the lateral wall than medially.
		lx0, _, lx1, _ := extent(l)
		lat, med := lx0+15, lx1-40
		if overlap(l, cd.left) > 0 {
			lat, med = lx1-15, lx0+40
		}
		if top(cd.lesion, lat) >= top(cd.lesion, med) {
			t.Errorf("%s: no meniscus: fluid top at lateral x=%d is row %d, medial x=%d row %d", name(tc), lat, top(cd.lesion, lat), med, top(cd.lesion, med))
		}
	}
	if seen == 0 {
		t.Fatal("no effusion positive generated")
	}
}

// top is the first on row of column x of m (size when empty).
func top(m []uint8, x int) int {
	for y := 0; y < size; y++ {
		if m[y*size+x] != 0 {
			return y
		}
	}
	return size
}

func overlap(a, b []uint8) int {
	n := 0
	for i := range a {
		if a[i] != 0 && b[i] != 0 {
			n++
		}
	}
	return n
}

func TestEdemaBilateral(t *testing.T) {
	t.Parallel()
	for _, tc := range sampleCases(t) {
		if tc.cs.lesion != "edema" || !tc.cs.positive {
			continue
		}
		r, l := overlap(tc.cd.lesion, tc.cd.right), overlap(tc.cd.lesion, tc.cd.left)
		if r < minLesionPx || l < minLesionPx {
			t.Errorf("%s: edema not bilateral: %d px in the right lung, %d in the left", name(tc), r, l)
		}
	}
}

// ctrTest measures the cardiothoracic ratio independently of ctrOf.
func ctrTest(cd *caseData) float64 {
	hx0, _, hx1, _ := extent(cd.heart)
	rx0, _, _, _ := extent(cd.right)
	_, _, lx1, _ := extent(cd.left)
	return float64(hx1-hx0+1) / float64(lx1-rx0+1)
}

func TestCardiothoracicRatio(t *testing.T) {
	t.Parallel()
	for _, tc := range sampleCases(t) {
		if tc.cs.lesion != "cardiomegaly" {
			continue
		}
		ctr := ctrTest(tc.cd)
		t.Logf("%s: CTR %.3f", name(tc), ctr)
		switch {
		case tc.cs.positive && ctr <= 0.55:
			t.Errorf("%s: positive with CTR %.3f ≤ 0.55", name(tc), ctr)
		case !tc.cs.positive && ctr >= 0.5:
			t.Errorf("%s: negative with CTR %.3f ≥ 0.5", name(tc), ctr)
		}
		if tc.cs.positive && !bytes.Equal(tc.cd.lesion, tc.cd.heart) {
			t.Errorf("%s: cardiomegaly lesion mask is not the heart mask", name(tc))
		}
	}
}

// near reports whether some pixel of a lies within Euclidean distance d
// of a pixel of b (brute force; independent of touches).
func near(a, b []uint8, d int) bool {
	set := make([]bool, len(b))
	for i, v := range b {
		set[i] = v != 0
	}
	for i, v := range a {
		if v == 0 {
			continue
		}
		x, y := i%size, i/size
		for dy := -d; dy <= d; dy++ {
			for dx := -d; dx <= d; dx++ {
				xx, yy := x+dx, y+dy
				if dx*dx+dy*dy <= d*d && xx >= 0 && yy >= 0 && xx < size && yy < size && set[yy*size+xx] {
					return true
				}
			}
		}
	}
	return false
}

func TestAnatomyGeometry(t *testing.T) {
	t.Parallel()
	for _, tc := range sampleCases(t) {
		cd := tc.cd
		if !near(cd.heart, cd.right, 2) || !near(cd.heart, cd.left, 2) {
			t.Errorf("%s: heart does not touch both lungs within 2 px", name(tc))
		}
		if overlap(cd.heart, cd.right) > 0 || overlap(cd.heart, cd.left) > 0 || overlap(cd.right, cd.left) > 0 {
			t.Errorf("%s: anatomy masks overlap", name(tc))
		}
		if cx(cd.right) >= cx(cd.left) {
			t.Errorf("%s: right lung centroid x %.1f not left of left lung %.1f", name(tc), cx(cd.right), cx(cd.left))
		}
		for _, m := range [][]uint8{cd.right, cd.left, cd.heart} {
			if sz := compSizes(m); len(sz) != 1 {
				t.Errorf("%s: anatomy mask has %d components, want 1", name(tc), len(sz))
			}
		}
	}
}

func cx(m []uint8) float64 {
	s, n := 0, 0
	for i, v := range m {
		if v != 0 {
			s += i % size
			n++
		}
	}
	return float64(s) / float64(n)
}

func compSizes(m []uint8) []int {
	return components(m, make([]int32, npx), nil)
}

// openDisc5 is a binary opening with the radius-5 disc (81 offsets), as
// the builder's clean-up applies (pixels outside count as background
// for dilation and foreground for erosion).
func openDisc5(m []uint8) []uint8 {
	var offs [][2]int
	for dy := -5; dy <= 5; dy++ {
		for dx := -5; dx <= 5; dx++ {
			if dx*dx+dy*dy <= 25 {
				offs = append(offs, [2]int{dx, dy})
			}
		}
	}
	x0, y0, x1, y1 := extent(m)
	er := make([]uint8, npx)
	for y := y0; y <= y1; y++ {
		for x := x0; x <= x1; x++ {
			ok := m[y*size+x] != 0
			for _, o := range offs {
				if !ok {
					break
				}
				xx, yy := x+o[0], y+o[1]
				if xx >= 0 && yy >= 0 && xx < size && yy < size && m[yy*size+xx] == 0 {
					ok = false
				}
			}
			if ok {
				er[y*size+x] = 1
			}
		}
	}
	out := make([]uint8, npx)
	for y := y0; y <= y1; y++ {
		for x := x0; x <= x1; x++ {
			if er[y*size+x] == 0 {
				continue
			}
			for _, o := range offs {
				xx, yy := x+o[0], y+o[1]
				if xx >= 0 && yy >= 0 && xx < size && yy < size {
					out[yy*size+xx] = 1
				}
			}
		}
	}
	return out
}

func TestLesionComponentsSurviveCleanup(t *testing.T) {
	t.Parallel()
	for _, tc := range sampleCases(t) {
		cd := tc.cd
		if cd.lesion == nil {
			continue
		}
		lungs := make([]uint8, npx)
		for i := range lungs {
			lungs[i] = cd.right[i] | cd.left[i]
		}
		labels := make([]int32, npx)
		sizes := components(cd.lesion, labels, nil)
		if len(sizes) == 0 {
			t.Errorf("%s: empty lesion mask", name(tc))
		}
		for k, n := range sizes {
			if n < 1000 {
				t.Errorf("%s: lesion component %d has %d px < 1000", name(tc), k, n)
			}
			comp := make([]uint8, npx)
			for i, l := range labels {
				if int(l) == k+1 {
					comp[i] = 1
				}
			}
			if !near(comp, lungs, 2) {
				t.Errorf("%s: lesion component %d does not touch a lung", name(tc), k)
			}
		}
		if tc.cs.lesion != "cardiomegaly" {
			if out := overlap(cd.lesion, lungs); out != count(cd.lesion) {
				t.Errorf("%s: %d lesion px outside the lungs", name(tc), count(cd.lesion)-out)
			}
		}
		// An opening with the builder's disc keeps nearly all of it, in
		// pieces of at least 1000 px.
		op := openDisc5(cd.lesion)
		kept := 0
		for _, n := range components(op, labels, nil) {
			if n >= 1000 {
				kept += n
			}
		}
		if total := count(cd.lesion); float64(kept) < 0.9*float64(total) {
			t.Errorf("%s: opening with r=5 keeps %d of %d lesion px in pieces ≥ 1000", name(tc), kept, total)
		}
	}
}

func count(m []uint8) int {
	n := 0
	for _, v := range m {
		if v != 0 {
			n++
		}
	}
	return n
}

func TestNegativesAndReports(t *testing.T) {
	t.Parallel()
	for _, tc := range sampleCases(t) {
		cd := tc.cd
		if tc.cs.positive != (cd.lesion != nil) {
			t.Errorf("%s: positive=%v but lesion mask present=%v", name(tc), tc.cs.positive, cd.lesion != nil)
		}
		if !strings.HasPrefix(cd.report, "Synthetic phantom: ") || !strings.HasSuffix(cd.report, ".") || strings.Contains(cd.report, "\n") {
			t.Errorf("%s: bad report %q", name(tc), cd.report)
		}
		if !tc.cs.positive && tc.cs.lesion != "cardiomegaly" && !strings.Contains(cd.report, "no "+tc.cs.lesion) {
			t.Errorf("%s: negative report %q does not deny the lesion", name(tc), cd.report)
		}
	}
}

// generate runs Generate into a fresh directory.
func generate(t *testing.T, n int, seed uint64, workers int) (string, Summary) {
	t.Helper()
	return generateOpt(t, Options{CasesPerLesion: n, Seed: seed, Workers: workers})
}

// generateOpt runs Generate with opt into a fresh directory.
func generateOpt(t *testing.T, opt Options) (string, Summary) {
	t.Helper()
	dir := t.TempDir()
	var progress bytes.Buffer
	opt.OutDir, opt.Progress = dir, &progress
	sum, err := Generate(context.Background(), opt)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if !strings.Contains(progress.String(), fmt.Sprintf("%d/%d cases", sum.Cases, sum.Cases)) {
		t.Errorf("progress output lacks the final line: %q", progress.String())
	}
	return dir, sum
}

func TestSameSeedSameBytesAnyWorkers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("generates 28 cases")
	}
	d1, s1 := generate(t, 1, 5, 1)
	d4, _ := generate(t, 1, 5, 4)
	a, b := outdirtest.ReadFiles(t, d1), outdirtest.ReadFiles(t, d4)
	if len(a) != len(b) || len(a) != s1.Files+2 {
		t.Fatalf("file counts differ: %d vs %d (summary %d PNGs + manifest + marker)", len(a), len(b), s1.Files)
	}
	for p, x := range a {
		if !bytes.Equal(x, b[p]) {
			t.Errorf("%s differs between 1 and 4 workers", p)
		}
	}
	checkManifest(t, d1, a)
	// A different seed must change the image.
	s := newScratch()
	x, err1 := makeCase(5, plan(nil, 1, 1)[0], s)
	y, err2 := makeCase(6, plan(nil, 1, 1)[0], s)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if bytes.Equal(x.img, y.img) {
		t.Error("seeds 5 and 6 gave the same image")
	}
}

var pairID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,63}_(positive|negative)_[0-9]+$`)

// checkManifest validates every manifest line against build.md §2.4 and
// the files it names.
func checkManifest(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	data := files["manifest.jsonl"]
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatal("manifest empty or not newline-terminated")
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 14 {
		t.Fatalf("manifest has %d lines, want 14", len(lines))
	}
	seenImg := map[string]bool{}
	for n, line := range lines {
		v, err := ojson.Parse([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		var keys []string
		for _, m := range v.O {
			keys = append(keys, m.Key)
		}
		label := v.Get("label").S
		want := "case_id,lesion,label,image,image_id,lung_masks,heart_mask,report"
		if label == "positive" {
			want = "case_id,lesion,label,image,image_id,lesion_masks,lung_masks,heart_mask,report"
		}
		if got := strings.Join(keys, ","); got != want {
			t.Errorf("line %d: keys %s, want %s", n+1, got, want)
		}
		id := v.Get("case_id").S
		if !pairID.MatchString(id) || !strings.Contains(id, "_"+label+"_") {
			t.Errorf("line %d: case_id %q does not match the pair-id pattern with polarity %s", n+1, id, label)
		}
		wantLesion := benchmark.DefaultLesions().Names()[n/2]
		if v.Get("lesion").S != wantLesion || (label == "positive") != (n%2 == 0) {
			t.Errorf("line %d: lesion %s label %s out of the documented order", n+1, v.Get("lesion").S, label)
		}
		img := v.Get("image_id").S
		if seenImg[img] || !strings.HasPrefix(id, img+"_") {
			t.Errorf("line %d: image_id %q repeated or not the case stem", n+1, img)
		}
		seenImg[img] = true
		paths := []string{v.Get("image").S, v.Get("heart_mask").S, v.Get("lung_masks").Get("right").S, v.Get("lung_masks").Get("left").S}
		if lm := v.Get("lesion_masks"); lm != nil {
			for _, p := range lm.A {
				paths = append(paths, p.S)
			}
		}
		for k, p := range paths {
			b, ok := files[p]
			if !ok {
				t.Errorf("line %d: %s missing", n+1, p)
				continue
			}
			m, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Errorf("line %d: %s: %v", n+1, p, err)
				continue
			}
			g, ok := m.(*image.Gray)
			if !ok || g.Bounds() != image.Rect(0, 0, size, size) {
				t.Errorf("line %d: %s is %T %v, want 1024×1024 8-bit grey", n+1, p, m, m.Bounds())
				continue
			}
			if k > 0 { // masks hold only 0 and 255
				for _, px := range g.Pix {
					if px != 0 && px != 255 {
						t.Errorf("line %d: mask %s has value %d", n+1, p, px)
						break
					}
				}
			}
		}
	}
	if _, ok := files["contact_sheet.png"]; !ok {
		t.Error("contact_sheet.png missing")
	}
	for p := range files {
		if strings.Contains(p, ".tmp-") {
			t.Errorf("temporary file left behind: %s", p)
		}
	}
}

func TestGenerateBadOptions(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opt  Options
		want string
	}{
		{"no dir", Options{CasesPerLesion: 1}, "no output directory"},
		{"zero cases", Options{OutDir: t.TempDir(), CasesPerLesion: 0}, "at least 1"},
		{"too many", Options{OutDir: t.TempDir(), CasesPerLesion: 100000}, "too large"},
		{"dir is a file", Options{OutDir: file, CasesPerLesion: 1}, "plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(context.Background(), tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

func TestGenerateCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Generate(ctx, Options{OutDir: t.TempDir(), CasesPerLesion: 2, Workers: 2})
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("err = %v, want a cancellation error", err)
	}
}

// TestNegativesPerLesion: Negatives sets the negatives per lesion apart
// from the positives (the demo needs one lesion-free case per lesion),
// and a count outside 0..CasesPerLesion is refused.
func TestNegativesPerLesion(t *testing.T) {
	t.Parallel()
	specs := plan(nil, 3, 1)
	pos, neg := map[string]int{}, map[string]int{}
	for _, cs := range specs {
		if cs.positive {
			pos[cs.lesion]++
		} else {
			neg[cs.lesion]++
		}
	}
	for _, l := range benchmark.DefaultLesions().Names() {
		if pos[l] != 3 || neg[l] != 1 {
			t.Errorf("%s: %d positives, %d negatives; want 3 and 1", l, pos[l], neg[l])
		}
	}
	for _, n := range []int{-1, 4} {
		err := checkOptions(Options{OutDir: "x", CasesPerLesion: 3, Negatives: n})
		if err == nil || !strings.Contains(err.Error(), "negatives per lesion") {
			t.Errorf("Negatives %d: %v", n, err)
		}
	}
}
