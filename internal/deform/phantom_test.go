package deform

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/phantom"
	"github.com/chexpercept/chexpercept/internal/rng"
)

type phantomCase struct {
	key string
	in  *Input
	err error // preparation failure
}

var (
	phantomOnce  sync.Once
	phantomCases []phantomCase
	phantomErr   error
)

// loadPhantom generates a small phantom set once and prepares every
// positive case up to the deformation input (§1, §5–§7). The set is the
// same at any worker count, and the fastest PNG level writes the same
// pixels, which are all that is read.
func loadPhantom(tb testing.TB) []phantomCase {
	phantomOnce.Do(func() {
		dir, err := os.MkdirTemp("", "deform-phantom-")
		if err != nil {
			phantomErr = err
			return
		}
		defer os.RemoveAll(dir) // everything is loaded into memory below
		sum, err := phantom.Generate(context.Background(), phantom.Options{OutDir: dir, CasesPerLesion: 2, Seed: 7, Workers: 2, FastPNG: true})
		if err != nil {
			phantomErr = err
			return
		}
		f, err := os.Open(sum.Manifest)
		if err != nil {
			phantomErr = err
			return
		}
		defer f.Close()
		cfg := buildcfg.Default()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct {
				CaseID               string `json:"case_id"`
				Lesion, Label, Image string
				LesionMasks          []string                     `json:"lesion_masks"`
				LungMasks            struct{ Right, Left string } `json:"lung_masks"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				phantomErr = err
				return
			}
			if line.Label != "positive" {
				continue
			}
			abs := func(p string) string { return filepath.Join(filepath.Dir(sum.Manifest), p) }
			pc := phantomCase{key: line.Lesion + "_" + line.CaseID}
			pc.in, pc.err = preparePhantom(cfg, line.Lesion, abs(line.Image), abs(line.LungMasks.Right), abs(line.LungMasks.Left), line.LesionMasks, abs)
			phantomCases = append(phantomCases, pc)
		}
		phantomErr = sc.Err()
	})
	if phantomErr != nil {
		tb.Fatalf("phantom: %v", phantomErr)
	}
	return phantomCases
}

func preparePhantom(cfg buildcfg.Config, lesion, image, right, left string, lesions []string, abs func(string) string) (*Input, error) {
	gray, err := frame.LoadGray(image)
	if err != nil {
		return nil, err
	}
	rm, err := frame.LoadMask(right)
	if err != nil {
		return nil, err
	}
	lm, err := frame.LoadMask(left)
	if err != nil {
		return nil, err
	}
	cand := mask.New(rm.W, rm.H)
	for _, p := range lesions {
		m, err := frame.LoadMask(abs(p))
		if err != nil {
			return nil, err
		}
		cand.OrWith(m)
	}
	return newInput(gray, cand, rm, lm, cfg.IsHeartLesion(lesion), cfg)
}

// TestPhantomCases runs every positive phantom case of a small generated
// set (all seven lesions) through Run and checks the invariants.
func TestPhantomCases(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("generates a phantom set")
	}
	cases := loadPhantom(t)
	var mu sync.Mutex
	ok, failed := 0, map[string]int{}
	// The cases are independent: each runs as a parallel subtest, and
	// the group returns when all have.
	t.Run("cases", func(t *testing.T) {
		for _, pc := range cases {
			if pc.err != nil {
				t.Logf("%s: preparation failed: %v", pc.key, pc.err)
				continue
			}
			t.Run(pc.key, func(t *testing.T) {
				t.Parallel()
				res, err := Run(rng.New("chexpercept/case/0/"+pc.key), pc.in, nil)
				var ce *frame.CaseError
				switch {
				case err == nil:
					mu.Lock()
					ok++
					mu.Unlock()
					checkInvariants(t, pc.key, pc.in, res)
				case errors.As(err, &ce):
					mu.Lock()
					failed[ce.Reason+": "+ce.Detail]++
					mu.Unlock()
					t.Logf("%s: %v; %s", pc.key, err, catalogueSummary(res))
				default:
					t.Errorf("%s: non-case error %v", pc.key, err)
				}
			})
		}
	})
	t.Logf("%d of %d positive phantom cases deformed; failures %v", ok, len(cases), failed)
	if ok*10 < len(cases)*7 {
		t.Errorf("only %d of %d phantom cases succeeded", ok, len(cases))
	}
}

// BenchmarkPhantomCase runs Run over the positive phantom cases in turn.
func BenchmarkPhantomCase(b *testing.B) {
	var ins []phantomCase
	for _, pc := range loadPhantom(b) {
		if pc.err == nil {
			ins = append(ins, pc)
		}
	}
	c0 := cpuTime()
	steps, fakes := 0, 0
	for i := 0; b.Loop(); i++ {
		pc := ins[i%len(ins)]
		res, err := Run(rng.New(fmt.Sprintf("chexpercept/case/%d/%s", i/len(ins), pc.key)), pc.in, nil)
		if err == nil {
			for _, st := range res.Final.Steps() {
				steps++
				fakes += len(st.Fakes)
			}
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/case")
	b.ReportMetric(float64(fakes)/float64(b.N), "fakes/case")
}

// catalogueSummary condenses the catalogue log for a failure message.
func catalogueSummary(res *Result) string {
	if res == nil || res.Log == nil {
		return ""
	}
	s := ""
	for _, c := range res.Log.Catalogue {
		for _, a := range c.Attempts {
			s += fmt.Sprintf("[c%d a%d %s", c.Component, a.Attempt, a.Result)
			for _, an := range a.Anatomies {
				s += fmt.Sprintf(" %s/%s kept=%v", an.Name, an.Operation, an.Kept)
			}
			if a.Validation != nil {
				s += fmt.Sprintf(" changed=%d need=%.0f iou=%.3f", a.Validation.Changed, a.Validation.ChangeNeeded, a.Validation.IoU)
			}
			s += "] "
		}
	}
	return s
}
