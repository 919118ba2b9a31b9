package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/mrmc"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// readScores reads the scores table at path as a stream (ParseScores
// bounds each record and the whole table); a file larger than
// mrmc.MaxScoresBytes is refused before its first byte is read. progress
// is told the bytes read.
func readScores(path string, f mrmc.FOM, progress *mrmcProgress) (*mrmc.Data, error) {
	file, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return nil, fmt.Errorf("--scores %s: %w", path, safefile.Reason(err))
	}
	defer func() { _ = file.Close() }() // read-only
	fi, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("--scores %s: %w", path, err)
	}
	if fi.Size() > mrmc.MaxScoresBytes {
		return nil, fmt.Errorf("--scores %s: %w", path, safefile.TooLarge(fi.Size(), mrmc.MaxScoresBytes))
	}
	return mrmc.ParseScores(&countingReader{r: file, n: func(n int64) { progress.reading(path, n, fi.Size()) }}, path, f)
}

// countingReader tells n the running count of the bytes read through it.
type countingReader struct {
	r     io.Reader
	total int64
	n     func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.total += int64(k)
	c.n(c.total)
	return k, err
}

// mrmcProgress prints progress lines to w while a long table is read and
// analysed: the first after every has passed, then one every every, so a
// table read in a moment prints none.
type mrmcProgress struct {
	w           io.Writer
	every       time.Duration
	start, last time.Time
}

func newMrmcProgress(w io.Writer, every time.Duration) *mrmcProgress {
	now := time.Now()
	return &mrmcProgress{w: w, every: every, start: now, last: now}
}

// due reports whether a line is due now, and if so starts the next wait.
func (p *mrmcProgress) due() bool {
	if time.Since(p.last) < p.every {
		return false
	}
	p.last = time.Now()
	return true
}

func (p *mrmcProgress) reading(path string, n, size int64) {
	if p.due() {
		fmt.Fprintf(p.w, "mrmc: reading %s: %.1f of %.1f MB (%d %%), %s elapsed\n", path, float64(n)/1e6, float64(size)/1e6, 100*n/max(size, 1), time.Since(p.start).Round(time.Second))
	}
}

func (p *mrmcProgress) analysing(done, total int) {
	if p.due() {
		fmt.Fprintf(p.w, "mrmc: analysing: %d of %d jackknifes and covariance rows, %s elapsed\n", done, total, time.Since(p.start).Round(time.Second))
	}
}

// mrmcMarker marks a directory chexpercept mrmc wrote.
const mrmcMarker = ".chexpercept-mrmc"

func newMrmcCmd(jo job.Options) *cobra.Command {
	var scores, fom, out, algorithm string
	var margin float64
	cmd := &cobra.Command{
		Use:   "mrmc --scores FILE.csv [--fom accuracy|auc] [--algorithm NAME [--margin M]] [--out DIR]",
		Short: "Multi-reader multi-case (Obuchowski–Rockette) analysis of a reader study's scores",
		Long: `Analyse a fully crossed reader study by the Obuchowski–Rockette method with
jackknife covariances over cases: random readers and random cases (Hillis'
degrees of freedom), fixed readers, fixed cases, and each modality's mean.

FILE.csv has the columns modality,reader,case,truth,score. With --fom accuracy a
score is 1 (right) or 0 (wrong); with --fom auc it is a rating and truth is 1
(diseased) or 0. --out DIR also writes mrmc.json and mrmc_*.csv into a new or
empty directory (or one an earlier mrmc wrote).

--algorithm NAME takes the reader NAME out of the readers: it is an
algorithm, compared in each modality with the other readers' mean (the
algorithm a reader without reader variance; --margin adds a non-inferiority
test) while the analyses above cover the other readers. A test or interval
whose variance is 0 (readers and cases that do not vary) is NA, with the
reason, never a zero-width interval. See docs/mrmc.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if scores == "" {
				return fmt.Errorf("--scores: a scores table is required")
			}
			f, err := mrmc.ParseFOM(fom)
			if err != nil {
				return fmt.Errorf("--fom: %w", err)
			}
			progress := newMrmcProgress(cmd.ErrOrStderr(), 2*time.Second)
			d, err := readScores(scores, f, progress)
			if err != nil {
				return err
			}
			if margin < 0 || margin >= 1 || margin != margin {
				return fmt.Errorf("--margin %v: want a non-inferiority margin from 0 to below 1", margin)
			}
			if margin > 0 && algorithm == "" {
				return fmt.Errorf("--margin: needs --algorithm")
			}
			var standalone []mrmc.StandaloneRow
			if algorithm != "" {
				if d, standalone, err = mrmc.SplitAlgorithm(d, algorithm, margin, 0); err != nil {
					return fmt.Errorf("--algorithm: %s: %w", scores, err)
				}
			}
			a, err := mrmc.AnalyzeWith(d, mrmc.Options{Progress: progress.analysing})
			if err != nil {
				return fmt.Errorf("%s: %w", scores, err)
			}
			a.Standalone = standalone
			if out != "" {
				err := runJob(cmd.Context(), jo, "mrmc", func(j *job.Job) error { return writeMrmc(j, out, scores, a, outdir.WriteFile) })
				if err != nil {
					return err
				}
			}
			return a.Text(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&scores, "scores", "", "the scores table (CSV: modality,reader,case,truth,score)")
	cmd.Flags().StringVar(&fom, "fom", string(mrmc.Accuracy), "figure of merit: accuracy (0/1 scores) or auc (ratings, truth 0/1)")
	cmd.Flags().StringVar(&out, "out", "", "also write mrmc.json and mrmc_*.csv into this directory")
	cmd.Flags().StringVar(&algorithm, "algorithm", "", "the reader that is an algorithm: compared with the other readers, who alone form the panel")
	cmd.Flags().Float64Var(&margin, "margin", 0, "with --algorithm: a non-inferiority margin on the figure of merit (0: none)")
	cmd.AddCommand(newMrmcPlanCmd(jo))
	return cmd
}

// writeMrmc writes the analysis' files into dir under the output-directory
// rule, never over the scores table, with write (outdir.WriteFile; a
// test injects a failing one).
//
// The folder holds one analysis, and says when it does not: the marker
// (written in place, first) reads unfinished while the files are
// written, and lists both the earlier analysis' files and this one's; only
// once every file is written does it read finished and list this
// analysis' files alone, the earlier analysis' files that this one does
// not write being removed (outdir.FinishOwned). A write that fails leaves
// the folder marked unfinished, and the same command run again finishes
// it. The scores table is never among the files removed, whatever a
// marker lists: it is recognised by identity (outdir.SameFile), not name.
func writeMrmc(j *job.Job, dir, scores string, a *mrmc.Analysis, write func(j *job.Job, dir, rel string, data []byte) error) error {
	unlock, err := lockOutDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := outdir.Require(dir, "mrmc", mrmcMarker)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	files := a.Files()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if in, same := outdir.SameFile(filepath.Join(dir, name), scores); same {
			return fmt.Errorf("--out: %s would overwrite the input %s", filepath.Join(dir, name), in)
		}
	}
	if _, err := outdir.MkdirAll(dir, ""); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	// The marker first and in place: a run stopped at any point leaves a
	// directory its rerun recognises.
	if st != outdir.Marked {
		if err := outdir.WriteMarker(filepath.Join(dir, mrmcMarker), []byte(mrmcUnfinishedText)); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if err := outdir.RemoveStale(dir, isMrmcFile, mrmcMarker); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	owns, err := mrmcOwns(dir, scores)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	earlier, err := mrmcListed(dir, owns)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	unfinished := mrmcUnfinishedText + strings.Join(slices.Compact(slices.Sorted(slices.Values(append(earlier, names...)))), "\n") + "\n"
	if err := outdir.WriteMarker(filepath.Join(dir, mrmcMarker), []byte(unfinished)); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	before, err := outdir.ListOwned(dir, mrmcMarker, owns)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	for _, name := range names {
		if err := write(j, dir, name, files[name]); err != nil {
			return fmt.Errorf("--out: %w (%s is marked unfinished; run the same command again)", err, dir)
		}
	}
	// The folder holds one analysis: the files of an earlier one that
	// this one does not write (mrmc_standalone.csv of a run with
	// --algorithm) go, and the marker reads finished.
	if err := outdir.FinishOwned(j, dir, mrmcMarker, mrmcMarkerText, owns, before); err != nil {
		return fmt.Errorf("--out: %w (%s is marked unfinished; run the same command again)", err, dir)
	}
	return nil
}

// mrmcMarkerText is the first line of the marker of a finished analysis;
// the files it wrote follow it (outdir.FinishOwned).
const mrmcMarkerText = "chexpercept mrmc: `chexpercept mrmc --out` may rewrite the files it wrote here\n"

// mrmcUnfinishedText is the marker's first line while an analysis is
// being written: the files listed after it are those of the earlier
// analysis and of this one, and the folder may hold some of each.
const mrmcUnfinishedText = "chexpercept mrmc: unfinished: an analysis was being written here and did not finish; run the same `chexpercept mrmc --out` command again\n"

// maxMrmcMarkerBytes bounds the marker read back: a first line and a few
// file names.
const maxMrmcMarkerBytes = 1 << 20

// mrmcListed are the files dir's marker lists as an earlier analysis'
// (those owns accepts), none when there is no marker yet.
func mrmcListed(dir string, owns func(rel string) bool) ([]string, error) {
	data, err := safefile.ReadFile(filepath.Join(dir, mrmcMarker), maxMrmcMarkerBytes, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for i, rel := range strings.Split(string(data), "\n") {
		if i > 0 && rel != "" && owns(rel) {
			out = append(out, rel)
		}
	}
	return out, nil
}

// mrmcOwns is isMrmcFile without the scores table: a table in dir under
// an mrmc file's name (the mrmc_standalone.csv an earlier analysis wrote,
// given back as --scores) is the input, never a file to remove.
func mrmcOwns(dir, scores string) (func(rel string) bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	input := map[string]bool{}
	for _, e := range entries {
		if isMrmcFile(e.Name()) {
			if _, same := outdir.SameFile(filepath.Join(dir, e.Name()), scores); same {
				input[e.Name()] = true
			}
		}
	}
	return func(rel string) bool { return isMrmcFile(rel) && !input[rel] }, nil
}

// isMrmcFile reports whether rel, a path in an mrmc --out folder, is one
// of the files mrmc writes there: mrmc.json and mrmc_*.csv.
func isMrmcFile(rel string) bool {
	return rel == "mrmc.json" || (strings.HasPrefix(rel, "mrmc_") && strings.HasSuffix(rel, ".csv") && !strings.Contains(rel, "/"))
}
