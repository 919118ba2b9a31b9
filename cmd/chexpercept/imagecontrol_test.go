package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/analysis/analysistest"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/report"
)

// distinctXrays gives every record of the benchmark in dir a radiograph
// of its own (a valid 1024² PNG whose first row encodes the record's
// index), so that a simulated model can tell the records apart by the
// image, as it does a real benchmark's.
func distinctXrays(t *testing.T, dir string, recs []*benchmark.Record) {
	t.Helper()
	for i, r := range recs {
		img := image.NewGray(image.Rect(0, 0, 1024, 1024))
		for j := range img.Pix {
			img.Pix[j] = 90
		}
		for b := 0; b < 16; b++ {
			if i&(1<<b) != 0 {
				img.Pix[b] = 200
			}
		}
		var buf bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, benchmark.ImagesDir, r.KeyID, filepath.FromSlash(benchmark.XrayRel)), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// mcNemar is McNemar's exact two-sided p for b and c discordant pairs,
// computed here in exact rationals: 2·Σ_{i ≤ min(b,c)} C(b+c, i) / 2^(b+c),
// at most 1.
func mcNemar(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	sum := new(big.Int)
	for i := 0; i <= min(b, c); i++ {
		sum.Add(sum, new(big.Int).Binomial(int64(n), int64(i)))
	}
	p := new(big.Rat).SetFrac(new(big.Int).Mul(sum, big.NewInt(2)), new(big.Int).Lsh(big.NewInt(1), uint(n)))
	f, _ := p.Float64()
	return min(f, 1)
}

// TestImageControlReport: two simulated models behind serve-baseline —
// one that answers from the image when it has one and from the
// question's text alone when the image is missing or blank (honest), and
// one that answers from the text alone whatever it is shown (guesser) —
// each evaluated, then under the text-only control (and the honest one
// under the blank-radiograph control too). The report says the honest
// model uses the image (its accuracy drops reliably without it) and the
// guesser does not; every row of ext_image_control.csv is recomputed here
// from the runs' rows in samples.csv.
func TestImageControlReport(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("five evaluations and a report; skipped with -short")
	}
	tmp := t.TempDir()
	bench := filepath.Join(tmp, "bench")
	recs := benchtest.Full(3)
	if err := benchtest.Write(bench, recs, false); err != nil {
		t.Fatal(err)
	}
	distinctXrays(t, bench, recs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	urls := map[string]string{}
	for _, m := range []struct {
		name    string
		ignores bool
	}{{"sim-honest", false}, {"sim-guesser", true}} {
		sim, err := fakemodel.LoadSimulated(fakemodel.SimConfig{Benchmark: bench, Accuracy: [4]float64{0.95, 0.9, 0.9, 0.9}, Seed: 3,
			TextPrior: fakemodel.TextPriorFrequent, IgnoresImage: m.ignores})
		if err != nil {
			t.Fatal(err)
		}
		url, _, stop, err := fakemodel.StartServer(ctx, fakemodel.ServerConfig{Policy: fakemodel.PolicySimulated, PolicySeed: 3, Simulated: sim})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		urls[m.name] = url
	}
	out := filepath.Join(tmp, "results")
	eval := func(model, control string) {
		args := []string{"eval", "--benchmark", bench, "--out", out, "--provider", "openai", "--model", model, "--endpoint", urls[model],
			"--no-cache", "--concurrency", "8"}
		if control != "" {
			args = append(args, "--control", control)
		}
		if _, stderr, code := runCLI(t, args...); code != 0 {
			t.Fatalf("eval %s %s: exit %d\n%s", model, control, code, stderr)
		}
	}
	for _, m := range []string{"sim-honest", "sim-guesser"} {
		eval(m, "")
		eval(m, "text-only")
	}
	eval("sim-honest", "blank-radiograph")
	rep := filepath.Join(tmp, "report")
	if _, stderr, code := runCLI(t, "report", out, "--out", rep, "--bootstrap", "500"); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}

	data, err := os.ReadFile(filepath.Join(rep, report.ImageControlFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0], ","); got != "run,control,oracle_mode,path,stage,n_records,acc_image,acc_control,difference,ci_low,ci_high,p_value,surviving_share" {
		t.Fatalf("header %s", got)
	}
	outcomes, err := analysistest.ReadOutcomes(rep, "implicit", recs)
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q is not a number", s)
		}
		return v
	}
	drops := map[string]int{}
	pairs := map[string]bool{}
	for _, row := range rows[1:] {
		run, control, path := row[0], row[1], benchmark.Path(row[3])
		k := benchmark.Stage(num(row[4]))
		pairs[run+" "+control] = true
		x := outcomes.Paired([]string{run, run + "_" + control}, path, k)
		img, ctl := x[0], x[1]
		n, rightImg, both, b, c := len(img), 0, 0, 0, 0
		sumImg, sumCtl := 0.0, 0.0
		for i := range img {
			sumImg += img[i]
			sumCtl += ctl[i]
			switch {
			case img[i] == 1 && ctl[i] == 1:
				rightImg++
				both++
			case img[i] == 1:
				rightImg++
				b++
			case ctl[i] == 1:
				c++
			}
		}
		where := fmt.Sprintf("%s %s %s stage %d", run, control, path, k)
		if num(row[5]) != float64(n) || n == 0 {
			t.Errorf("%s: n_records %s, samples.csv pairs %d", where, row[5], n)
			continue
		}
		accI, accC := sumImg/float64(n), sumCtl/float64(n)
		for _, c := range []struct {
			col  string
			got  string
			want float64
		}{{"acc_image", row[6], accI}, {"acc_control", row[7], accC}, {"difference", row[8], accI - accC}, {"p_value", row[11], mcNemar(b, c)}} {
			if math.Abs(num(c.got)-c.want) > 5e-7 {
				t.Errorf("%s: %s %s, recomputed %.6f", where, c.col, c.got, c.want)
			}
		}
		if lo, hi, d := num(row[9]), num(row[10]), num(row[8]); !(lo <= d && d <= hi) {
			t.Errorf("%s: interval [%v, %v] does not hold the difference %v", where, lo, hi, d)
		}
		switch {
		case rightImg == 0 && row[12] != "NA":
			t.Errorf("%s: surviving_share %s with no right answer with the image", where, row[12])
		case rightImg > 0 && math.Abs(num(row[12])-float64(both)/float64(rightImg)) > 5e-7:
			t.Errorf("%s: surviving_share %s, recomputed %d/%d", where, row[12], both, rightImg)
		}
		if num(row[9]) > 0 && num(row[11]) <= 0.05 {
			drops[run+" "+control]++
		}
	}
	want := []string{"openai_sim-guesser text-only", "openai_sim-honest blank-radiograph", "openai_sim-honest text-only"}
	if got := slices.Sorted(func(yield func(string) bool) {
		for p := range pairs {
			if !yield(p) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Errorf("ext_image_control.csv compares %q, want %q", got, want)
	}
	if drops["openai_sim-honest text-only"] == 0 || drops["openai_sim-honest blank-radiograph"] == 0 {
		t.Errorf("the honest model's controls show no reliable drop: %v", drops)
	}
	if drops["openai_sim-guesser text-only"] != 0 {
		t.Errorf("the guesser's control shows a reliable drop at %d stage(s)", drops["openai_sim-guesser text-only"])
	}
	md, err := os.ReadFile(filepath.Join(rep, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("CHX_DUMP") != "" {
		t.Logf("%s\n%s", md, data)
	}
	for _, s := range []string{"## Does the model use the image?",
		"openai_sim-honest (rehearsal — not a model result) uses the image: without the image (text-only control) its accuracy drops reliably at ",
		"openai_sim-guesser (rehearsal — not a model result) shows no reliable drop at any stage without the image (text-only control): it answers every stage without using the image",
		"### Above the no-image level"} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}

// eval refuses an unknown control and a control of a baseline before
// anything starts, naming the flag.
func TestEvalControlFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider", "opensource", "--model", "m", "--endpoint", "http://127.0.0.1:9/v1", "--control", "no-image"},
			`--control: image control "no-image" is not one of text-only, blank-radiograph`},
		{[]string{"--provider", "baseline", "--model", "random", "--control", "text-only"},
			"--control text-only: the baseline policies do not look at the image"},
	} {
		args := append([]string{"eval", "--benchmark", genBench, "--out", t.TempDir()}, tc.args...)
		_, stderr, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
