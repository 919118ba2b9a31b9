package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/fakemodel"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
)

// Performance benchmarks (docs/performance.md). Both run the real client against
// serve-baseline in a separate process (the re-executed test binary), so
// that the client's memory is measured alone:
//
//   - BenchmarkEvalScheduling: 630 records with small (flat 1024² PNG)
//     images, 50 ms server latency, concurrency 32, an empty image memo.
//     Metric ideal-frac is the ideal makespan max(calls × latency ÷
//     concurrency, longest record's turns × latency) over the measured
//     call phase; whole-ideal-frac is the same over the whole run (Run
//     from entry to return); ≥ 0.90 is the target for both.
//     BenchmarkEvalSchedulingDistinct makes every image file distinct, so
//     the first run decodes all 2,100; it runs a second time over the
//     same files (memo hits).
//   - BenchmarkEvalBytes: 105 records whose every image is a distinct
//     ~0.8 MB phantom-like PNG, zero latency; request MB/s and calls/s at
//     concurrency 32, and peak memory at concurrency 64.
//
// scripts/bench-eval.sh runs them one per process and prints the figures;
// with --full it also runs BenchmarkEvalStartup (in process, no server).

const serverEnv = "CHX_EVAL_TEST_SERVER"

// serverMain serves a baseline policy until stdin closes (child process).
// With CHX_EVAL_SERVER_CPUPROFILE set, the server's CPU profile is
// written to that file (the benchmark's -test.cpuprofile covers the
// client only); with CHX_EVAL_SERVER_RSS set, its peak RSS is printed
// to stderr as it exits.
func serverMain() int {
	lat, _ := time.ParseDuration(os.Getenv("CHX_LATENCY"))
	if name := os.Getenv("CHX_EVAL_SERVER_CPUPROFILE"); name != "" {
		f, err := os.Create(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
	}
	url, srv, stop, err := fakemodel.StartServer(context.Background(), fakemodel.ServerConfig{Policy: "random", Latency: lat})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_ = srv
	fmt.Println(url)
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	stop()
	if os.Getenv("CHX_EVAL_SERVER_RSS") != "" {
		fmt.Fprintf(os.Stderr, "serve-baseline peak RSS: %.0f MiB\n", maxRSS()/(1<<20))
	}
	return 0
}

// childServer starts serve-baseline in a child process and returns its URL.
func childServer(b *testing.B, latency time.Duration) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), serverEnv+"=1", "CHX_LATENCY="+latency.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	return line[:len(line)-1]
}

// callStats measures a benchmark's calls and records.
func planStats(b *testing.B, dir string) (calls, longest int) {
	bench, err := benchdir.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range bench.Records {
		q := r.Questions()
		calls += q
		longest = max(longest, q)
	}
	return calls, longest
}

// scheduleBounds is the best share of the ideal makespan that the
// dispatch order allows at concurrency conc, when every call takes the
// same time: list scheduling of the records' turn counts (each record
// goes, in order, to the worker that frees first), its makespan compared
// with the ideal max(calls ÷ conc, longest record). It gives the bound of
// eval's own order (planTasks) and, for comparison, of benchmark order.
func scheduleBounds(b *testing.B, dir string, conc int) (dispatch, fileOrder float64) {
	bench, err := benchdir.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	all := make([]int, len(bench.Records))
	for i := range all {
		all[i] = i
	}
	var ordered, inFile []int
	for _, t := range (&runner{bench: bench}).planTasks(all) {
		ordered = append(ordered, t.rec.Questions())
	}
	for _, r := range bench.Records {
		inFile = append(inFile, r.Questions())
	}
	return listScheduleShare(ordered, conc), listScheduleShare(inFile, conc)
}

// listScheduleShare simulates list scheduling of jobs (durations, in
// order) on n machines and returns ideal ÷ makespan.
func listScheduleShare(jobs []int, n int) float64 {
	free := make([]int, n) // when each machine frees
	total, longest := 0, 0
	for _, d := range jobs {
		m := 0
		for i := range free {
			if free[i] < free[m] {
				m = i
			}
		}
		free[m] += d
		total += d
		longest = max(longest, d)
	}
	makespan := slices.Max(free)
	ideal := max(float64(total)/float64(n), float64(longest))
	return ideal / float64(makespan)
}

func BenchmarkEvalScheduling(b *testing.B) { schedulingBench(b, false) }

// BenchmarkEvalSchedulingDistinct is BenchmarkEvalScheduling with every
// image file distinct (the flat PNG with a tEXt chunk naming it): each of
// the 2,100 images is decoded once in the run, as on a real benchmark's
// first run.
func BenchmarkEvalSchedulingDistinct(b *testing.B) { schedulingBench(b, true) }

func schedulingBench(b *testing.B, distinct bool) {
	const latency = 50 * time.Millisecond
	const conc = 32
	dir := b.TempDir()
	recs := benchtest.Full(30)
	if err := benchtest.Write(dir, recs, false); err != nil {
		b.Fatal(err)
	}
	if distinct {
		n := 0
		for _, r := range recs {
			for _, rel := range benchtest.ImagePaths(r) {
				name := filepath.Join(dir, benchmark.ImagesDir, r.KeyID, filepath.FromSlash(rel))
				if err := os.WriteFile(name, withText(benchtest.FlatPNG(false), strconv.Itoa(n)), 0o644); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
	}
	calls, longest := planStats(b, dir)
	bound, fileBound := scheduleBounds(b, dir, conc)
	url := childServer(b, latency)
	ideal := max(time.Duration(calls)*latency/conc, time.Duration(longest)*latency)
	b.ResetTimer()
	var frac, rate, lat, fracObs, whole, first, second float64
	for i := 0; i < b.N; i++ {
		o := baseOptions(dir, b.TempDir(), model(b, "opensource", "bench-scheduling"))
		o.Endpoints, o.Concurrency, o.AllowInvalid = []string{url}, conc, true
		o.CacheDir = b.TempDir() // a first run: the image memo is empty
		s, w := timedRun(b, o)
		if s.Results.Counts.RecordsOK != s.Selected {
			b.Fatalf("counts %+v", s.Results.Counts)
		}
		frac += ideal.Seconds() / s.CallPhase.Seconds()
		rate += float64(calls) / s.CallPhase.Seconds()
		whole += w.whole.Seconds()
		first += w.firstCall.Seconds()
		ml := meanLatency(b, s.RunDir)
		lat += ml
		obs := time.Duration(ml * float64(time.Millisecond))
		fracObs += max(time.Duration(calls)*obs/conc, time.Duration(longest)*obs).Seconds() / s.CallPhase.Seconds()
		if distinct { // the same files again: the memo knows them
			o.OutDir = b.TempDir()
			_, w2 := timedRun(b, o)
			second += w2.whole.Seconds()
		}
	}
	n := float64(b.N)
	b.ReportMetric(fracObs/n, "ideal-frac-at-observed-latency")
	b.ReportMetric(lat/n, "call-latency-ms")
	b.ReportMetric(frac/n, "ideal-frac")
	b.ReportMetric(rate/n, "calls/s")
	b.ReportMetric(float64(calls), "calls")
	b.ReportMetric(float64(calls)/ideal.Seconds(), "ideal-calls/s")
	b.ReportMetric(ideal.Seconds(), "ideal-s")
	b.ReportMetric(whole/n, "whole-s")
	b.ReportMetric(ideal.Seconds()/(whole/n), "whole-ideal-frac")
	b.ReportMetric(first/n, "first-call-s")
	b.ReportMetric(bound, "schedule-bound")
	b.ReportMetric(fileBound, "schedule-bound-file-order")
	if distinct {
		b.ReportMetric(second/n, "whole-s@second")
		b.ReportMetric(ideal.Seconds()/(second/n), "whole-ideal-frac@second")
	}
}

// runTiming is what timedRun measured.
type runTiming struct {
	whole     time.Duration // Run, from entry to return
	firstCall time.Duration // from Run's entry to the first call's attempt
}

// timedRun runs o and measures the whole run (everything the eval command
// does after parsing its flags: load, validate, select, plan, verify,
// ask, write the derived files) and when the first call left.
func timedRun(b *testing.B, o Options) (*Summary, runTiming) {
	var firstNS atomic.Int64
	start := time.Now()
	testHookCall = func(string, string) { firstNS.CompareAndSwap(0, int64(time.Since(start))) }
	defer func() { testHookCall = nil }()
	s := run(b, o)
	return s, runTiming{whole: time.Since(start), firstCall: time.Duration(firstNS.Load())}
}

// BenchmarkEvalStartup is the full-size start-up figure: the
// 2,100-record benchmark with 7,000 distinct full-size images, evaluated
// in process (baseline oracle, concurrency 16), twice with one cache
// directory: the first run decodes every image, the second only hashes
// them (verification memo). Reported: when the first call left and the
// whole run, for each. CHX_BENCH_FULL_DIR names a benchmark to use (a
// phantom build, or a directory this benchmark fills once and reuses);
// without it a phantom-like one (writePhantomBench, about 5.8 GB) is
// written to a temporary directory.
func BenchmarkEvalStartup(b *testing.B) {
	dir := os.Getenv("CHX_BENCH_FULL_DIR")
	switch {
	case dir == "":
		dir = b.TempDir()
		writePhantomBench(b, dir, benchtest.Full(100))
	default:
		// An existing benchmark is used as it is; a new one is written
		// beside and renamed into place, so an interrupted write is never
		// taken for a benchmark.
		if _, err := os.Stat(filepath.Join(dir, benchmark.JSONName)); err != nil {
			tmp := dir + ".partial"
			os.RemoveAll(tmp)
			writePhantomBench(b, tmp, benchtest.Full(100))
			if err := os.Rename(tmp, dir); err != nil {
				b.Fatal(err)
			}
		}
	}
	calls, _ := planStats(b, dir)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cache := b.TempDir()
		for _, pass := range []string{"first", "second"} {
			o := baseOptions(dir, b.TempDir(), model(b, "baseline", "oracle"))
			o.Concurrency, o.CacheDir = 16, cache
			s, w := timedRun(b, o)
			if s.Results.Counts.RecordsOK != s.Selected || s.Results.Counts.Calls != calls {
				b.Fatalf("%s run: counts %+v", pass, s.Results.Counts)
			}
			b.ReportMetric(w.firstCall.Seconds(), "first-call-s@"+pass)
			b.ReportMetric(w.whole.Seconds(), "whole-s@"+pass)
			b.ReportMetric(s.CallPhase.Seconds(), "call-phase-s@"+pass)
			b.ReportMetric(float64(s.Images.Decodes), "decodes@"+pass)
			b.ReportMetric(float64(s.Images.Remembered), "remembered@"+pass)
		}
	}
	b.ReportMetric(float64(calls), "calls")
	b.ReportMetric(maxRSS()/(1<<20), "maxrss-MiB")
}

// phantomPool encodes a few phantom-like PNGs (1024² RGB, a radial
// gradient with pixel noise: about 0.8 MB each, like real radiographs).
func phantomPool(b *testing.B, n int) [][]byte {
	var out [][]byte
	for k := 0; k < n; k++ {
		img := image.NewNRGBA(image.Rect(0, 0, 1024, 1024))
		r := rand.New(rand.NewPCG(uint64(k), 99))
		for y := 0; y < 1024; y++ {
			for x := 0; x < 1024; x++ {
				g := min(255, 60+(x*x+y*y)/16384+r.IntN(8)+k)
				i := img.PixOffset(x, y)
				img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = uint8(g), uint8(g), uint8(g), 255
			}
		}
		var buf bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
			b.Fatal(err)
		}
		out = append(out, buf.Bytes())
	}
	return out
}

// withText inserts a tEXt chunk after IHDR, giving a distinct file (and
// content hash) with the same pixels.
func withText(pngData []byte, text string) []byte {
	const ihdrEnd = 8 + 25
	data := append([]byte("id\x00"), text...)
	chunk := make([]byte, 0, 12+len(data))
	chunk = binary.BigEndian.AppendUint32(chunk, uint32(len(data)))
	chunk = append(chunk, "tEXt"...)
	chunk = append(chunk, data...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := make([]byte, 0, len(pngData)+len(chunk))
	out = append(out, pngData[:ihdrEnd]...)
	out = append(out, chunk...)
	return append(out, pngData[ihdrEnd:]...)
}

// writePhantomBench writes recs with every image a distinct phantom-like
// PNG.
func writePhantomBench(b *testing.B, dir string, recs []*benchmark.Record) (images int, bytes int64) {
	if err := benchtest.Write(dir, recs, false); err != nil {
		b.Fatal(err)
	}
	pool := phantomPool(b, 6)
	for _, r := range recs {
		for _, rel := range benchtest.ImagePaths(r) {
			data := withText(pool[images%len(pool)], strconv.Itoa(images))
			name := filepath.Join(dir, benchmark.ImagesDir, r.KeyID, filepath.FromSlash(rel))
			if err := os.WriteFile(name, data, 0o644); err != nil {
				b.Fatal(err)
			}
			images++
			bytes += int64(len(data))
		}
	}
	return images, bytes
}

// countingTransport counts request body bytes sent.
type countingTransport struct {
	next  http.RoundTripper
	bytes atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.ContentLength > 0 {
		t.bytes.Add(r.ContentLength)
	}
	return t.next.RoundTrip(r)
}

// memSampler records the peak heap in use while a run is in progress.
type memSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

func startMemSampler() *memSampler {
	m := &memSampler{stop: make(chan struct{})}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if v := ms.HeapInuse + ms.StackInuse; v > m.peak.Load() {
				m.peak.Store(v)
			}
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

func (m *memSampler) done() uint64 { close(m.stop); m.wg.Wait(); return m.peak.Load() }

func maxRSS() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) * 1024 // Linux reports KiB
}

func BenchmarkEvalBytes(b *testing.B) {
	dir := b.TempDir()
	nImages, nBytes := writePhantomBench(b, dir, benchtest.Full(5))
	calls, _ := planStats(b, dir)
	url := childServer(b, 0)
	ct := &countingTransport{next: http.DefaultTransport}
	testHTTPClient = &http.Client{Transport: ct}
	defer func() { testHTTPClient = nil }()
	runtime.GC()
	b.ResetTimer()
	for _, conc := range []int{32, 64} {
		var mbps, cps, peak float64
		for i := 0; i < b.N; i++ {
			ct.bytes.Store(0)
			o := baseOptions(dir, b.TempDir(), model(b, "opensource", "bench-bytes"))
			o.Endpoints, o.Concurrency, o.AllowInvalid = []string{url}, conc, true
			o.Timeout = time.Minute
			ms := startMemSampler()
			s := run(b, o)
			peak = max(peak, float64(ms.done()))
			if s.Results.Counts.RecordsOK != s.Selected {
				b.Fatalf("counts %+v", s.Results.Counts)
			}
			mbps += float64(ct.bytes.Load()) / 1e6 / s.CallPhase.Seconds()
			cps += float64(calls) / s.CallPhase.Seconds()
		}
		n := float64(b.N)
		b.ReportMetric(mbps/n, fmt.Sprintf("MB/s@c%d", conc))
		b.ReportMetric(cps/n, fmt.Sprintf("calls/s@c%d", conc))
		b.ReportMetric(peak/(1<<20), fmt.Sprintf("peak-heap-MiB@c%d", conc))
	}
	b.ReportMetric(maxRSS()/(1<<20), "maxrss-MiB")
	b.ReportMetric(float64(nImages), "images")
	b.ReportMetric(float64(nBytes)/float64(nImages)/1e6, "MB/image")
}

// meanLatency is the mean latency_ms of a run's asked turns: the server's
// delay plus the round trip as the client saw it.
func meanLatency(b *testing.B, dir string) float64 {
	recs, err := rundir.ReadResults(filepath.Join(dir, rundir.ResultsFile))
	if err != nil {
		b.Fatal(err)
	}
	n, sum := 0, int64(0)
	for _, r := range recs {
		for _, t := range r.Turns {
			if t.Status == results.TurnAsked {
				n++
				sum += t.LatencyMS
			}
		}
	}
	return float64(sum) / float64(max(n, 1))
}
