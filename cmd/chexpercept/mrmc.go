package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/mrmc"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// readScores reads the scores table at path as a stream (ParseScores
// bounds each record and the whole table); a file larger than
// mrmc.MaxScoresBytes is refused before its first byte is read.
func readScores(path string, f mrmc.FOM) (*mrmc.Data, error) {
	file, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return nil, fmt.Errorf("--scores %s: %w", path, safefile.Reason(err))
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("--scores %s: %w", path, err)
	}
	if fi.Size() > mrmc.MaxScoresBytes {
		return nil, fmt.Errorf("--scores %s: %w", path, safefile.TooLarge(fi.Size(), mrmc.MaxScoresBytes))
	}
	return mrmc.ParseScores(file, path, f)
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
test) while the analyses above cover the other readers. See docs/mrmc.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if scores == "" {
				return fmt.Errorf("--scores: a scores table is required")
			}
			f, err := mrmc.ParseFOM(fom)
			if err != nil {
				return fmt.Errorf("--fom: %w", err)
			}
			d, err := readScores(scores, f)
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
			a, err := mrmc.Analyze(d, 0)
			if err != nil {
				return fmt.Errorf("%s: %w", scores, err)
			}
			a.Standalone = standalone
			if out != "" {
				err := runJob(cmd.Context(), jo, "mrmc", func(j *job.Job) error { return writeMrmc(j, out, scores, a) })
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
	return cmd
}

// writeMrmc writes the analysis' files into dir under the output-directory
// rule, never over the scores table.
func writeMrmc(j *job.Job, dir, scores string, a *mrmc.Analysis) error {
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
		if err := outdir.WriteMarker(filepath.Join(dir, mrmcMarker), []byte(mrmcMarkerText)); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if err := outdir.RemoveStale(dir, isMrmcFile, mrmcMarker); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	before, err := outdir.ListOwned(dir, mrmcMarker, isMrmcFile)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	for _, name := range names {
		if err := outdir.WriteFile(j, dir, name, files[name]); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	// The folder holds one analysis: the files of an earlier one that
	// this one does not write (mrmc_standalone.csv of a run with
	// --algorithm) go.
	if err := outdir.FinishOwned(j, dir, mrmcMarker, mrmcMarkerText, isMrmcFile, before); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// mrmcMarkerText is the first line of the marker; the files the last
// analysis wrote follow it (outdir.FinishOwned).
const mrmcMarkerText = "chexpercept mrmc: `chexpercept mrmc --out` may rewrite the files it wrote here\n"

// isMrmcFile reports whether rel, a path in an mrmc --out folder, is one
// of the files mrmc writes there: mrmc.json and mrmc_*.csv.
func isMrmcFile(rel string) bool {
	return rel == "mrmc.json" || (strings.HasPrefix(rel, "mrmc_") && strings.HasSuffix(rel, ".csv") && !strings.Contains(rel, "/"))
}
