package anatomy

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/phantom"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// TestPhantomCases runs §5–§10 on one phantom positive per lesion: every
// case must pass with the default configuration (the phantom promises
// lesions that touch a lung and hearts that touch both lungs).
func TestPhantomCases(t *testing.T) {
	if testing.Short() {
		t.Skip("generates phantom images")
	}
	dir := t.TempDir()
	if _, err := phantom.Generate(context.Background(), phantom.Options{OutDir: dir, CasesPerLesion: 1, Seed: 5, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "manifest.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg := buildcfg.Default()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var line struct {
			CaseID      string                       `json:"case_id"`
			Lesion      string                       `json:"lesion"`
			Label       string                       `json:"label"`
			LesionMasks []string                     `json:"lesion_masks"`
			LungMasks   struct{ Right, Left string } `json:"lung_masks"`
			HeartMask   string                       `json:"heart_mask"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Label != "positive" {
			continue
		}
		n++
		heart := cfg.IsHeartLesion(line.Lesion)
		t.Run(line.Lesion, func(t *testing.T) {
			load := func(rel string) mask.Mask {
				m, err := mask.DecodePNGFile(filepath.Join(dir, rel))
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			cand := mask.New(1024, 1024)
			for _, p := range line.LesionMasks {
				cand.OrWith(load(p))
			}
			p, _, ov := analyse(t, cand, load(line.LungMasks.Right), load(line.LungMasks.Left), heart, cfg)
			if heart {
				return
			}
			a, err := Attributes(rng.New("chexpercept/case/0/"+line.Lesion+"_"+line.CaseID), ov, p, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d component(s)\n%s\n%s\n%s\n%s", len(p.Components),
				a.Distribution.Derivation, a.Location.Derivation, a.Severity.Derivation, a.Comparison.Derivation)
		})
	}
	if n != 7 {
		t.Errorf("%d positive phantom cases, want 7", n)
	}
}
