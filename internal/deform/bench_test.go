package deform

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
)

// BenchmarkRunCase is one full case (cost field, catalogue, sequential
// pass with fakes) on the synthetic lung-type case, cycling seeds.
func BenchmarkRunCase(b *testing.B) {
	for _, heart := range []bool{false, true} {
		in := synthInput(b, heart)
		b.Run(fmt.Sprintf("heart=%v", heart), func(b *testing.B) {
			steps, fakes := 0, 0
			c0 := cpuTime()
			for i := 0; b.Loop(); i++ {
				res, err := Run(rng.New(fmt.Sprintf("bench/%d", i%8)), in, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, st := range res.Final.Steps() {
					steps++
					fakes += len(st.Fakes)
				}
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(steps)/float64(b.N), "steps/case")
			b.ReportMetric(float64(fakes)/float64(b.N), "fakes/case")
		})
	}
}

// BenchmarkCostField is the per-case cost field alone.
func BenchmarkCostField(b *testing.B) {
	in := synthInput(b, false)
	g, _ := in.Geometry()
	c0 := cpuTime()
	for b.Loop() {
		CostField(g.Gray, g.LungRight, 2, 4, 0.99)
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkBall is geodesic balls (search, organic parameters and noise,
// ball test) from points on and around the synthetic lesion's border, both
// expansions (target: the lesion) and contractions (target: background).
func BenchmarkBall(b *testing.B) {
	in := synthInput(b, false)
	g, err := in.Geometry()
	if err != nil {
		b.Fatal(err)
	}
	e, err := newEngine(g, in.Cfg)
	if err != nil {
		b.Fatal(err)
	}
	m := g.Components[0]
	ring := mask.Contour(mask.Dilate(m, mask.Ellipse32(), 1))
	inner := mask.Contour(mask.Erode(m, mask.Ellipse32(), 1))
	if len(ring) == 0 || len(inner) == 0 {
		b.Fatal("synthetic lesion has no rings")
	}
	var out []int32
	c0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		r := rng.New(fmt.Sprintf("ball/%d", i%16))
		out, _, _ = e.ball(r, m, 1, ring[(i*37)%len(ring)], out[:0])
		out, _, _ = e.ball(r, m, 0, inner[(i*53)%len(inner)], out[:0])
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkOrganicNoise is one ball's noise field at a typical size.
func BenchmarkOrganicNoise(b *testing.B) {
	cfg := buildcfg.Default()
	var buf []float64
	r := rng.New("noise")
	c0 := cpuTime()
	for b.Loop() {
		buf = organicNoise(r, 121, cfg.OrganicCells, cfg.OrganicWeights, buf)
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user+system CPU time; on a shared machine it is
// a steadier per-op figure than wall time (it includes GC work).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
