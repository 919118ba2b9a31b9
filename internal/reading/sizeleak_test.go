package reading

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/build"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/phantom"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
)

// phantomBench builds a benchmark of revision-required records from
// synthetic radiographs, as the demo builds its own (same encoder
// settings), with rr records per lesion.
func phantomBench(t *testing.T, rr int) *benchmark.Benchmark {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a phantom benchmark; skipped with -short")
	}
	dir := t.TempDir()
	sum, err := phantom.Generate(context.Background(), phantom.Options{OutDir: filepath.Join(dir, "phantom"), CasesPerLesion: rr + 1, Negatives: 1,
		Seed: 1, FastPNG: true, Progress: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	cfg := buildcfg.Default()
	cfg.LF, cfg.RF, cfg.RR = 0, 0, rr
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

// TestCandidateSizesCarryNoAnswer: on the revision-result turn (four
// candidate masks, one the answer), a reader who picks the candidate whose
// served PNG is the smallest — or the one that is never the largest —
// does no better than chance, because every candidate of a turn is served
// at the same byte length. The ground truth comes from the plan, read by
// the test; the sizes are what the browser receives.
func TestCandidateSizesCarryNoAnswer(t *testing.T) {
	t.Parallel()
	bench := phantomBench(t, 2)
	st := newStudy(t, bench, protocol.OracleImplicit)
	c := st.signIn("reader2")
	var turns, smallest, largest, unequal int
	for {
		tp := c.current()
		if tp.done {
			break
		}
		gt := st.gtAnswer(c.name, tp)
		var sizes []int
		for _, m := range imageRE.FindAllStringSubmatch(tp.html, -1) {
			if !isTurnImage(m[1], tp) {
				continue
			}
			code, _, body := c.do("GET", m[1], nil)
			if code != http.StatusOK {
				t.Fatalf("%s: %d", m[1], code)
			}
			sizes = append(sizes, len(body))
		}
		if tp.options == 4 && len(sizes) == 4 && !tp.multi {
			turns++
			ans := sizes[gt[0]-1]
			isMin, isMax := true, true
			for i, s := range sizes {
				if i == gt[0]-1 {
					continue
				}
				isMin = isMin && ans < s
				isMax = isMax && ans > s
				if s != ans {
					unequal++
				}
			}
			if isMin {
				smallest++
			}
			if isMax {
				largest++
			}
		}
		if code := c.answer(tp, gt...); code != http.StatusSeeOther {
			t.Fatalf("answer: %d", code)
		}
	}
	if turns < 10 { // of the 14 records, one such turn each
		t.Fatalf("only %d revision-result turns", turns)
	}
	t.Logf("%d revision-result turns: the answer's PNG strictly smallest %d, strictly largest %d; %d unequal pairs", turns, smallest, largest, unequal)
	if unequal > 0 || smallest > 0 || largest > 0 {
		t.Errorf("candidate sizes differ: the answer is strictly the smallest in %d and the largest in %d of %d turns", smallest, largest, turns)
	}
}

// isTurnImage reports whether url is an image of the turn on screen.
func isTurnImage(url string, tp turnPage) bool {
	var pos, seq, i int
	n, _ := fmt.Sscanf(url, "/image/%d/%d/%d", &pos, &seq, &i)
	return n == 3 && pos == tp.pos && seq == tp.seq
}
