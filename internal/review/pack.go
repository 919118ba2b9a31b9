package review

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// AnnotatorName is the folder name of annotator i (0-based): annotator_A …
// annotator_Z, then annotator_AA, annotator_AB, … (spreadsheet columns).
func AnnotatorName(i int) string {
	var s []byte
	for n := i + 1; n > 0; n = (n - 1) / 26 {
		s = append([]byte{byte('A' + (n-1)%26)}, s...)
	}
	return "annotator_" + string(s)
}

// reportExcerptRunes bounds the report_excerpt column (white space
// collapsed, a cut marked with "…").
const reportExcerptRunes = 300

// PackOptions configures Pack.
type PackOptions struct {
	Reviewers int // N ≥ 1, one folder annotator_<X> each (default 6 in the command)
	Workers   int // ≤ 0: number of CPUs
	Warn      io.Writer
	// Job is the command's job: it tracks the temporary files of the
	// writes, and the finished marker is its commit point. Nil: neither.
	Job *job.Job
}

// PackSummary reports what Pack wrote.
type PackSummary struct {
	Cases, Skipped, Sheets int
}

// Pack writes offline review packs (§4) under out, which must not exist,
// be empty or hold an unfinished pack (claimPackDir): for each lesion and label, in source order, row i goes to
// reviewer i mod N, whose folder annotator_<X>/<lesion>/<label>/ gets the
// review image <key_id>.png and a line in review_sheet.csv. Positive
// review images are the CXR beside the CXR with the candidate mask in red
// at alpha 0.33 (2048×1024 RGB); negatives are the canonical CXR. A case
// whose inputs cannot be read is skipped with a warning.
func Pack(ctx context.Context, cases []*source.Case, out string, opt PackOptions) (PackSummary, error) {
	var sum PackSummary
	if opt.Reviewers < 1 {
		return sum, fmt.Errorf("reviewers must be at least 1, got %d", opt.Reviewers)
	}
	if err := claimPackDir(out); err != nil {
		return sum, err
	}
	// Folder of every case, by round robin within lesion and label.
	dirs := make([]string, len(cases))
	counter := map[string]int{}
	for i, c := range cases {
		k := c.Lesion + "/" + c.Label
		a := counter[k] % opt.Reviewers
		counter[k]++
		dirs[i] = filepath.Join(out, AnnotatorName(a), c.Lesion, c.Label)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	loader, err := source.NewLoader(nil, nil, buildcfg.Default(), "", nil)
	if err != nil {
		return sum, err
	}
	type result struct {
		row []string
		err error
	}
	res := make([]result, len(cases))
	var mu sync.Mutex
	made := map[string]bool{}
	mkdir := func(d string) error {
		mu.Lock()
		defer mu.Unlock()
		if made[d] {
			return nil
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		made[d] = true
		return nil
	}
	next := make(chan int)
	var wg sync.WaitGroup
	var fatal error
	var fatalOnce sync.Once
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				row, err := packCase(opt.Job, loader, cases[i], dirs[i], mkdir)
				var ce *frame.CaseError
				if err != nil && !errors.As(err, &ce) {
					fatalOnce.Do(func() { fatal = err })
				}
				res[i] = result{row, err}
			}
		}()
	}
feed:
	for i := range cases {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	if fatal != nil {
		return sum, fatal
	}
	sheets := map[string][][]string{}
	var order []string
	for i, r := range res {
		if r.err != nil {
			sum.Skipped++
			if opt.Warn != nil {
				fmt.Fprintf(opt.Warn, "warning: %s skipped: %s\n", textsafe.OneLine(cases[i].KeyID()), textsafe.OneLine(r.err.Error()))
			}
			continue
		}
		sum.Cases++
		if sheets[dirs[i]] == nil {
			order = append(order, dirs[i])
			sheets[dirs[i]] = [][]string{ReviewSheetHeader}
		}
		sheets[dirs[i]] = append(sheets[dirs[i]], r.row)
	}
	for _, d := range order {
		if err := atomicfile.WriteFile(opt.Job, filepath.Join(d, "review_sheet.csv"), csvRows(sheets[d])); err != nil {
			return sum, err
		}
		sum.Sheets++
	}
	return sum, finishPack(opt.Job, out)
}

// packCase writes one review image and returns its sheet row. Unreadable
// inputs are *frame.CaseError; anything else (a write failure) is fatal.
func packCase(j *job.Job, l *source.Loader, c *source.Case, dir string, mkdir func(string) error) ([]string, error) {
	imgSHA, err := source.ImageSHA256(c)
	if err != nil {
		return nil, err
	}
	gray, err := frame.LoadGray(c.Image)
	if err != nil {
		return nil, err
	}
	report, err := reportText(c)
	if err != nil {
		return nil, frame.Fail("report_unreadable", "%v", err)
	}
	maskSHA := ""
	var img image.Image = gray
	if c.Positive() {
		m, err := l.CandidateMask(c)
		if err != nil {
			return nil, err
		}
		maskSHA = source.MaskSHA256(m)
		img = render.ReviewImage(gray, m)
	}
	var buf bytes.Buffer
	if err := render.EncodeFastPNG(&buf, img); err != nil {
		return nil, err
	}
	if err := mkdir(dir); err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	if err := atomicfile.WriteFile(j, filepath.Join(dir, c.KeyID()+".png"), buf.Bytes()); err != nil {
		return nil, err
	}
	return []string{c.KeyID(), c.Lesion, c.Label, imgSHA, maskSHA, strings.Join(cleanHints(c.LocationHints), "; "), textsafe.ClipRunes(textsafe.Squash(report), reportExcerptRunes), ""}, nil
}
