package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
)

// BenchmarkSampleManifest10000 is `sample --manifest` on 10,000 candidates
// (5,000 positives with a lesion mask and a lung PNG pair, 5,000
// negatives; every file distinct, 25,000 files): read the manifest, sample,
// check every referenced file's header, write candidates.jsonl. Target
// (docs/performance.md): under 10 s on 2 cores.
func BenchmarkSampleManifest10000(b *testing.B) {
	dir := b.TempDir()
	jpg, pngb := testJPEG(b), testPNG(b)
	var man strings.Builder
	write := func(rel string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 10000; i++ {
		lesion := benchmark.DefaultLesions().Names()[i%len(benchmark.DefaultLesions().Names())]
		img := fmt.Sprintf("img%05d.jpg", i)
		write(img, jpg)
		if i%2 == 1 {
			fmt.Fprintf(&man, `{"case_id": "x%05d_negative_0", "lesion": %q, "label": "negative", "image": %q, "image_id": "i%05d"}`+"\n", i, lesion, img, i)
			continue
		}
		for _, n := range []string{"m", "r", "l"} {
			write(fmt.Sprintf("%s%05d.png", n, i), pngb)
		}
		fmt.Fprintf(&man, `{"case_id": "x%05d_positive_0", "lesion": %q, "label": "positive", "image": %q, "image_id": "i%05d", `+
			`"lesion_masks": ["m%05d.png"], "lung_masks": {"right": "r%05d.png", "left": "l%05d.png"}}`+"\n", i, lesion, img, i, i, i, i)
	}
	write("manifest.jsonl", []byte(man.String()))
	cfg := buildcfg.Default()
	cfg.MaxPositiveCandidates, cfg.MaxNegativeCandidates = 10000, 10000
	out := filepath.Join(dir, "candidates.jsonl")
	b.ResetTimer()
	for b.Loop() {
		cases, _, err := ReadSource(filepath.Join(dir, "manifest.jsonl"), cfg)
		if err != nil {
			b.Fatal(err)
		}
		cands, _, _ := Sample(context.Background(), cases, cfg, 11)
		if len(cands) != 10000 {
			b.Fatalf("%d candidates", len(cands))
		}
		if err := CheckInputs(context.Background(), cands); err != nil {
			b.Fatal(err)
		}
		if err := WriteCandidates(nil, out, cands); err != nil {
			b.Fatal(err)
		}
	}
}
