package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/mrmc"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/reading"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// planMarker marks a directory chexpercept mrmc plan wrote.
const planMarker = ".chexpercept-mrmc-plan"

// planMarkerText is the first line of the marker; the files the last plan
// wrote follow it (outdir.FinishOwned).
const planMarkerText = "chexpercept mrmc plan: `chexpercept mrmc plan --out` may rewrite the files it wrote here\n"

// componentFlags are the flags that give a pilot's components directly,
// in the order an error lists them.
var componentFlags = []string{"var", "cov1", "cov2", "cov3", "var-tr", "pilot-cases"}

func newMrmcPlanCmd(jo job.Options) *cobra.Command {
	var pilotPath, out, writePlanPath, primaryPath string
	var primaryStage int
	var effect, alpha, margin, target float64
	var readers, cases, blocks int
	var table bool
	var readersGrid, casesGrid []int
	var direct mrmc.Pilot
	cmd := &cobra.Command{
		Use:   "plan (--pilot DIR/mrmc.json | --var V --cov1 C1 --cov2 C2 --cov3 C3 --var-tr VTR --pilot-cases K*) [--effect D] [--alpha A] [--margin M] [--blocks B] [--write-plan PLAN.yaml --primary-path P --primary-stage K] (--readers J --cases K | --power P (--readers J | --cases K) | --table) [--out DIR]",
		Short: "Power and sample size of a two-modality reader study from a pilot's variance components",
		Long: `Size a fully crossed two-modality reader study (every reader reads every case
in both modalities) from a pilot: the Obuchowski–Rockette variance components
of chexpercept mrmc --out (its mrmc.json, or the folder holding it), or the
components given directly. For each analysis — random readers and random cases,
fixed readers, fixed cases — it prints

  --readers J --cases K          the power of a study of J readers and K cases
  --power P --readers J          the smallest number of cases reaching power P
  --power P --cases K            the smallest number of readers reaching power P
  --table                        the power over a grid of readers and cases
                                 (--readers-grid, --cases-grid; --table may
                                 accompany either of the above)

The effect to detect is the pilot's observed difference (its first modality
minus its second) unless --effect gives it; --margin M tests non-inferiority
(the difference above −M, one-sided at alpha/2). --blocks B sizes a
split-plot study instead: readers and cases split evenly into B blocks, each
block's readers reading its cases only (J and K are the totals; searches step
by B). The method is Hillis, Obuchowski & Berbaum (2011), with the within-block
covariances of Obuchowski, Gallas & Hillis (2012); see docs/mrmc.md.
--write-plan PLAN.yaml writes the analysis plan of the study sized (random
readers and cases: its readers and cases, alpha, the design, the margin) with
the primary endpoint --primary-path and --primary-stage, for read init --plan
(docs/reading.md); the file must not exist. --out DIR also writes
plan_power.csv and plan_table.csv.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			pilot, source, err := planPilot(fl, pilotPath, direct)
			if err != nil {
				return err
			}
			if blocks < 1 {
				return fmt.Errorf("--blocks %d: want 1 (fully crossed) or more", blocks)
			}
			h := mrmc.Hypothesis{Effect: effect, Alpha: alpha, Margin: margin, Blocks: blocks}
			effectFrom := "given"
			if err := checkPlanLevels(alpha, margin); err != nil {
				return err
			}
			if !fl.Changed("effect") {
				if fl.Changed("var") {
					return errors.New("--effect: with the components given directly, give the difference to detect")
				}
				h.Effect, effectFrom = pilot.Difference, "the pilot's observed difference"
				switch {
				case len(pilot.Modalities) > 2:
					return fmt.Errorf("--effect: the pilot %s has %d modalities: give the difference to detect between the two the study compares", source, len(pilot.Modalities))
				case math.IsNaN(h.Effect):
					return fmt.Errorf("--effect: the pilot %s has no observed difference (NA): give the difference to detect", source)
				case h.Effect == 0 && margin == 0:
					return fmt.Errorf("--effect: the pilot %s observed no difference (0): a study sized for it has power alpha whatever its size; give the difference to detect", source)
				}
			} else if math.IsNaN(effect) || math.IsInf(effect, 0) || math.Abs(effect) >= 1 {
				return fmt.Errorf("--effect %v: want a difference of figures of merit, between −1 and 1", effect)
			}
			req, err := planRequest(fl, readers, cases, target, table, readersGrid, casesGrid)
			if err != nil {
				return err
			}
			pl, err := pilot.Plan(h, req)
			if err != nil {
				return fmt.Errorf("%s: %w", source, err)
			}
			var text bytes.Buffer
			if err := pl.Text(&text, source, effectFrom); err != nil {
				return err
			}
			if writePlanPath != "" {
				if err := writeStudyPlan(cmd, jo, writePlanPath, primaryPath, primaryStage, pl); err != nil {
					return err
				}
			} else if primaryPath != "" || primaryStage != 0 {
				return errors.New("--primary-path and --primary-stage: only with --write-plan")
			}
			if out != "" {
				err := runJob(cmd.Context(), jo, "mrmc plan", func(j *job.Job) error { return writePlan(j, out, pilotPath, pl) })
				if err != nil {
					return err
				}
			}
			_, err = cmd.OutOrStdout().Write(text.Bytes())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&pilotPath, "pilot", "", "the pilot analysis: mrmc.json of chexpercept mrmc --out, or its folder")
	f.Float64Var(&direct.Var, "var", 0, "instead of --pilot: the pilot's error variance Var")
	f.Float64Var(&direct.Cov1, "cov1", 0, "instead of --pilot: Cov1 (same reader, different modalities)")
	f.Float64Var(&direct.Cov2, "cov2", 0, "instead of --pilot: Cov2 (different readers, same modality)")
	f.Float64Var(&direct.Cov3, "cov3", 0, "instead of --pilot: Cov3 (different readers and modalities)")
	f.Float64Var(&direct.VarTR, "var-tr", 0, "instead of --pilot: the modality-by-reader variance VarTR")
	f.IntVar(&direct.Cases, "pilot-cases", 0, "instead of --pilot: the number of cases the components were estimated on")
	f.Float64Var(&effect, "effect", 0, "the difference of figures of merit to detect, first modality minus second (default: the pilot's observed difference)")
	f.Float64Var(&alpha, "alpha", mrmc.DefaultAlpha, "the level of the test")
	f.Float64Var(&margin, "margin", 0, "a non-inferiority margin: the study shows the difference is above −M (0: a test of equal modalities)")
	f.IntVar(&blocks, "blocks", 1, "plan a split-plot study of this many blocks (1: fully crossed)")
	f.IntVar(&readers, "readers", 0, "the planned study's number of readers")
	f.IntVar(&cases, "cases", 0, "the planned study's number of cases")
	f.Float64Var(&target, "power", 0, "a target power: find the smallest number of cases (with --readers) or readers (with --cases)")
	f.BoolVar(&table, "table", false, "print a power table over a grid of readers and cases")
	f.IntSliceVar(&readersGrid, "readers-grid", nil, "the readers of the power table (implies --table; default 3,4,5,6,8,10,12,15,20,25,30)")
	f.IntSliceVar(&casesGrid, "cases-grid", nil, "the cases of the power table (implies --table; default 50,75,100,150,200,300,400,500,750,1000,1500,2000)")
	f.StringVar(&writePlanPath, "write-plan", "", "write the sized study's analysis plan (YAML) for read init --plan to this new file")
	f.StringVar(&primaryPath, "primary-path", "", "with --write-plan: the primary endpoint's path (revision_required, revision_free, lesion_free)")
	f.IntVar(&primaryStage, "primary-stage", 0, "with --write-plan: the primary endpoint's stage")
	f.StringVar(&out, "out", "", "also write plan_power.csv and plan_table.csv into this directory")
	return cmd
}

// planPilot is the pilot of a plan: read from --pilot, or the components
// given directly, never both.
func planPilot(fl *pflag.FlagSet, path string, direct mrmc.Pilot) (*mrmc.Pilot, string, error) {
	var given, missing []string
	for _, name := range componentFlags {
		if fl.Changed(name) {
			given = append(given, "--"+name)
		} else {
			missing = append(missing, "--"+name)
		}
	}
	switch {
	case path != "" && len(given) > 0:
		return nil, "", fmt.Errorf("--pilot and %s: give the pilot analysis or its components, not both", strings.Join(given, ", "))
	case path == "" && len(given) == 0:
		return nil, "", errors.New("--pilot: a pilot analysis (mrmc.json of chexpercept mrmc --out) or its components (--var, --cov1, --cov2, --cov3, --var-tr, --pilot-cases) are needed")
	case path == "" && len(missing) > 0:
		return nil, "", fmt.Errorf("%s: missing; with the components given directly, all of --var, --cov1, --cov2, --cov3, --var-tr and --pilot-cases are needed", strings.Join(missing, ", "))
	case path == "":
		p := direct
		p.Difference = math.NaN()
		if err := p.Check(); err != nil {
			return nil, "", fmt.Errorf("the components given: %w", err)
		}
		return &p, "the components given", nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "mrmc.json")
	}
	file, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return nil, "", fmt.Errorf("--pilot %s: %w", path, safefile.Reason(err))
	}
	defer func() { _ = file.Close() }() // read-only
	p, err := mrmc.ParsePilot(file, path)
	if err != nil {
		return nil, "", fmt.Errorf("--pilot: %w", err)
	}
	return p, path, nil
}

func checkPlanLevels(alpha, margin float64) error {
	if !(alpha > 0 && alpha < 1) {
		return fmt.Errorf("--alpha %v: want a level between 0 and 1", alpha)
	}
	if !(margin >= 0 && margin < 1) {
		return fmt.Errorf("--margin %v: want a non-inferiority margin from 0 to below 1", margin)
	}
	return nil
}

// planRequest checks the flags that say what to compute.
func planRequest(fl *pflag.FlagSet, readers, cases int, target float64, table bool, readersGrid, casesGrid []int) (mrmc.Request, error) {
	req := mrmc.Request{Table: table || fl.Changed("readers-grid") || fl.Changed("cases-grid"), ReadersGrid: readersGrid, CasesGrid: casesGrid}
	for _, s := range []struct {
		name  string
		n     int
		bound int
		to    *int
	}{{"readers", readers, mrmc.MaxPlanReaders, &req.Readers}, {"cases", cases, mrmc.MaxPlanCases, &req.Cases}} {
		if !fl.Changed(s.name) {
			continue
		}
		if s.n < 2 || s.n > s.bound {
			return req, fmt.Errorf("--%s %d: want 2 to %d", s.name, s.n, s.bound)
		}
		*s.to = s.n
	}
	if fl.Changed("power") {
		if !(target > 0 && target < 1) {
			return req, fmt.Errorf("--power %v: want a target power between 0 and 1", target)
		}
		req.Target = target
	}
	for _, g := range []struct {
		name  string
		grid  []int
		bound int
	}{{"readers-grid", readersGrid, mrmc.MaxPlanReaders}, {"cases-grid", casesGrid, mrmc.MaxPlanCases}} {
		if fl.Changed(g.name) && len(g.grid) == 0 {
			return req, fmt.Errorf("--%s: empty", g.name)
		}
		for _, n := range g.grid {
			if n < 2 || n > g.bound {
				return req, fmt.Errorf("--%s: %d: want 2 to %d", g.name, n, g.bound)
			}
		}
	}
	switch {
	case req.Target > 0 && req.Readers > 0 && req.Cases > 0:
		return req, errors.New("--power with both --readers and --cases: give one of them, the other is what is computed")
	case req.Target > 0 && req.Readers == 0 && req.Cases == 0:
		return req, errors.New("--power: give --readers J (to find the cases) or --cases K (to find the readers)")
	case req.Target == 0 && (req.Readers > 0) != (req.Cases > 0):
		given, other := "--readers", "--cases"
		if req.Cases > 0 {
			given, other = other, given
		}
		return req, fmt.Errorf("%s without %s: give both for the power of that study, or --power P to find the %s", given, other, strings.TrimPrefix(other, "--"))
	case req.Target == 0 && req.Readers == 0 && !req.Table:
		return req, errors.New("nothing to compute: give --readers and --cases (the power), --power with --readers or --cases (the smallest study), or --table")
	}
	return req, nil
}

// writePlan writes the plan's files into dir under the output-directory
// rule, never over the pilot.
func writePlan(j *job.Job, dir, pilot string, pl *mrmc.Plan) error {
	unlock, err := lockOutDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := outdir.Require(dir, "mrmc plan", planMarker)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	files := pl.Files()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	if pilot != "" {
		for _, name := range names {
			if in, same := outdir.SameFile(filepath.Join(dir, name), pilot, filepath.Join(pilot, "mrmc.json")); same {
				return fmt.Errorf("--out: %s would overwrite the input %s", filepath.Join(dir, name), in)
			}
		}
	}
	if _, err := outdir.MkdirAll(dir, ""); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	// The marker first: a run stopped at any point leaves a directory its
	// rerun recognises.
	if st != outdir.Marked {
		if err := outdir.WriteMarker(filepath.Join(dir, planMarker), []byte(planMarkerText)); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if err := outdir.RemoveStale(dir, isPlanFile, planMarker); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	before, err := outdir.ListOwned(dir, planMarker, isPlanFile)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	for _, name := range names {
		if err := outdir.WriteFile(j, dir, name, files[name]); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	// The folder holds one plan: the table of an earlier run that this
	// one does not write goes.
	if err := outdir.FinishOwned(j, dir, planMarker, planMarkerText, isPlanFile, before); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// isPlanFile reports whether rel, a path in a plan's --out folder, is one
// of the files plan writes there.
func isPlanFile(rel string) bool {
	return rel == "plan_power.csv" || rel == "plan_table.csv"
}

// writeStudyPlan writes the analysis plan of the study a plan sized —
// the random-readers-and-cases answer's readers and cases — to a new file.
func writeStudyPlan(cmd *cobra.Command, jo job.Options, path, primaryPath string, primaryStage int, pl *mrmc.Plan) error {
	if pl.Pilot.FOM != "" && pl.Pilot.FOM != mrmc.Accuracy {
		return fmt.Errorf("--write-plan: the pilot's figure of merit is %s; a reading study's is accuracy", pl.Pilot.FOM)
	}
	var sized *mrmc.PlanResult
	for i := range pl.Results {
		if pl.Results[i].Analysis == mrmc.RRRC {
			sized = &pl.Results[i]
		}
	}
	if sized == nil || sized.Err != nil || sized.Readers == 0 || sized.Cases == 0 {
		return errors.New("--write-plan: no study sized for random readers and cases (give --readers and --cases, or a reachable --power)")
	}
	plan := &results.StudyPlan{Primary: results.PlanEndpoint{Path: primaryPath, Stage: primaryStage}, FOM: "accuracy", Analysis: "rrrc",
		Alpha: pl.Hypothesis.Alpha, Design: "crossed", Readers: sized.Readers, Records: sized.Cases, Margin: pl.Margin}
	if plan.Alpha == 0 {
		plan.Alpha = mrmc.DefaultAlpha
	}
	if pl.Blocks > 1 {
		plan.Design, plan.Blocks = reading.DesignSplitPlot, pl.Blocks
	}
	// The file is checked as read init --plan will read it.
	data := reading.FormatPlan(plan)
	if _, err := reading.ParsePlan(bytes.NewReader(data), path); err != nil {
		return fmt.Errorf("--write-plan: %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("--write-plan %s: exists; it is not replaced", path)
	}
	return runJob(cmd.Context(), jo, "mrmc plan", func(j *job.Job) error { return atomicfile.WriteFile(j, path, data) })
}
