package build

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// floorResult is the PNG-encoding floor the build is measured against
// (docs/performance.md): the wall time to
// encode every PNG of chexpercept/ and masks/ with the build's encoder and
// worker count.
type floorResult struct {
	Files   int
	Seconds float64
}

// measureFloor decodes the final PNGs in batches (untimed) and times only
// their parallel re-encoding with `workers` goroutines. Masks are encoded
// as image.Gray and bundle images as opaque image.RGBA, as the build does.
func measureFloor(opt Options) (_ *floorResult, err error) {
	out, workers := opt.Out, opt.Workers
	var files []string
	for _, d := range []string{imagesDir, masksDir} {
		err := filepath.WalkDir(filepath.Join(out, d), func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !de.IsDir() && strings.HasSuffix(p, ".png") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	const batch = 64
	res := &floorResult{Files: len(files)}
	prog := newStageProgress(opt, "measuring the PNG floor", "files re-encoded", len(files))
	defer func() { prog.finish(err != nil) }()
	var total time.Duration
	for lo := 0; lo < len(files); lo += batch {
		hi := min(lo+batch, len(files))
		imgs := make([]image.Image, hi-lo)
		for i := lo; i < hi; i++ {
			data, err := safefile.ReadFile(files[i], imagefile.MaxFileBytes, safefile.NoFollow)
			if err != nil {
				return nil, err
			}
			img, err := imagefile.DecodePNG(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", files[i], err)
			}
			switch im := img.(type) {
			case *image.Gray, *image.RGBA:
				imgs[i-lo] = im
			default:
				rgba := image.NewRGBA(img.Bounds())
				draw.Draw(rgba, rgba.Bounds(), img, img.Bounds().Min, draw.Src)
				imgs[i-lo] = rgba
			}
		}
		t0 := time.Now()
		var wg sync.WaitGroup
		next := make(chan int)
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var buf bytes.Buffer
				for i := range next {
					buf.Reset()
					var err error
					if g, ok := imgs[i].(*image.Gray); ok {
						err = png.Encode(&buf, g)
					} else {
						err = render.EncodePNG(&buf, imgs[i])
					}
					if err != nil {
						errs <- err
						return
					}
					// A mutex and, every LogEvery, one line: noise
					// against a PNG encode.
					prog.add(1)
				}
			}()
		}
		for i := range imgs {
			next <- i
		}
		close(next)
		wg.Wait()
		total += time.Since(t0)
		close(errs)
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	res.Seconds = total.Seconds()
	return res, nil
}

// writeTiming writes build_timing.json, the one non-reproducible file.
func writeTiming(j *job.Job, out string, start, processed, assembled, end time.Time, workers int, floor *floorResult) error {
	secs := func(d time.Duration) *ojson.Value { return ojson.Float(d.Seconds()) }
	v := ojson.NewObject().
		Set("start", ojson.Str(start.UTC().Format(time.RFC3339Nano))).
		Set("end", ojson.Str(end.UTC().Format(time.RFC3339Nano))).
		Set("workers", ojson.Int(int64(workers))).
		Set("durations_seconds", ojson.NewObject().
			Set("processing", secs(processed.Sub(start))).
			Set("assembly", secs(assembled.Sub(processed))).
			Set("build", secs(assembled.Sub(start))).
			Set("total", secs(end.Sub(start))))
	if floor != nil {
		ratio := 0.0
		if floor.Seconds > 0 {
			ratio = assembled.Sub(start).Seconds() / floor.Seconds
		}
		v.Set("png_floor", ojson.NewObject().
			Set("files", ojson.Int(int64(floor.Files))).
			Set("seconds", ojson.Float(floor.Seconds)).
			Set("build_over_floor", ojson.Float(ratio)))
	} else {
		v.Set("png_floor", ojson.Null())
	}
	return atomicfile.WriteFile(j, filepath.Join(out, timingJSON), ojson.Marshal(v))
}
