package deform

import (
	"fmt"
	"syscall"
	"testing"
	"time"

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

// cpuTime is the process's user+system CPU time; on a shared machine it is
// a steadier per-op figure than wall time (it includes GC work).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
