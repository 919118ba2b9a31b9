package eval

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// TestTransientImageReadStopsTheRun: a benchmark image that cannot be
// read for a reason outside it (too many open files, an I/O error) stops
// the run with that error; no record is written as an error for it, and a
// plain rerun completes with the results of a run that met no fault.
func TestTransientImageReadStopsTheRun(t *testing.T) {
	ref := t.TempDir()
	run(t, baseOptions(sampleBench, ref, model(t, "baseline", "first")))
	want := stripTiming(t, filepath.Join(ref, rundir.ResultsFile))

	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.EIO, syscall.ENOMEM} {
		t.Run(errno.Error(), func(t *testing.T) {
			out := t.TempDir()
			o := baseOptions(sampleBench, out, model(t, "baseline", "first"))
			o.Concurrency = 2
			var n atomic.Int64
			readBenchFile = func(name string) ([]byte, error) {
				if n.Add(1) == 3 {
					return nil, errno
				}
				return readRegular(name)
			}
			t.Cleanup(func() { readBenchFile = readRegular })
			_, err := Run(t.Context(), o)
			if !errors.Is(err, errno) {
				t.Fatalf("run with a faulted image read: %v, want %v", err, errno)
			}
			if b, err := os.ReadFile(filepath.Join(out, rundir.ResultsFile)); err == nil {
				recs, err := rundir.ReadResults(filepath.Join(out, rundir.ResultsFile))
				if err != nil {
					t.Fatalf("results after the fault: %v (%d bytes)", err, len(b))
				}
				for _, r := range recs {
					if r.Status == results.StatusError {
						t.Errorf("%s written as an error: %v", r.KeyID, r.Error)
					}
				}
			}
			readBenchFile = readRegular
			run(t, o)
			if got := stripTiming(t, filepath.Join(out, rundir.ResultsFile)); !slices.Equal(got, want) {
				t.Errorf("rerun after the fault differs from an unfaulted run:\n%v\nwant\n%v", got, want)
			}
		})
	}
}
