package analysis

import (
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
)

// Run is one run directory (<results>/<run name>/oracle_<mode>/) as the
// analysis sees it: its settings and its records.
type Run struct {
	Dir             string // the run directory as found
	Name            string // run name: the parent folder's name
	Provider        string
	Model           string // alias, raw id or policy, from the manifest
	OracleMode      string
	ParseMode       string
	BenchmarkSHA256 string // the manifest's dataset hash ("" if unknown)
	// Identity is the benchmark identity the manifest records; zero
	// (unknown) for a run made before identities were recorded or
	// without a manifest.
	Identity      benchmark.Identity
	DatasetPath   string // the manifest's dataset path ("" if unknown)
	ProfileName   string
	ProfileSHA256 string
	// Sampling is what the manifest records as sent per call
	// (runmodel.Sampling.Text); "" when there is no manifest.
	Sampling string

	// Records are the last line per key_id, in index order, restricted
	// to keys of the benchmark when one is loaded. Nil when results.jsonl
	// could not be used.
	Records []*results.Record
	// Ref is the reference (§10.1) metrics over every ok record, or over
	// all_results.json when results.jsonl is unusable; nil if neither.
	Ref *results.RefMetrics

	// Reading is the manifest's reading arm (a reader study's run of
	// human answers); nil otherwise.
	Reading *results.ReadingArm

	// Selected is the manifest's selected_records; 0 when unknown.
	Selected int
	// Finished counts the distinct key_ids with a line in results.jsonl
	// (error records included: they are finished), before any are left
	// out for not being in the benchmark.
	Finished int
	// Live is set when an incomplete run's lock was held by a writer
	// while the report read it.
	Live bool

	// Server is who answered, as the manifest's server identity
	// describes it (provider.Identity.String); "" when unknown.
	Server string
	// Kind is whose answers the run holds: the manifest's, or for a run
	// without one the kind of the provider its name starts with
	// (results.KindOf). A rehearsal (chexpercept's stand-in answered a
	// model's run) is not a model result and is marked wherever shown.
	Kind results.RunKind
	// Control is the image control a control run was asked under (the
	// manifest's control); "" for every other run.
	Control results.Control
}

// ReaderOf is a reader's run's place in its reader study: the study, the
// reader and the arm (with the model run shown in an aided study); ok is
// false for a run that is not a human reader's. A run exported before
// the manifest named its study says what it has: the manifest's reading
// member when there is one, else the reader is the manifest's model name
// (the run's name without "human_" when there is no manifest), the arm
// unaided and the study "" (not recorded).
func (r *Run) ReaderOf() (arm results.ReadingArm, ok bool) {
	if r.Kind != results.KindHuman {
		return results.ReadingArm{}, false
	}
	if r.Reading != nil {
		arm = *r.Reading
	}
	if arm.Reader == "" {
		arm.Reader = r.Model
	}
	if arm.Reader == "" {
		arm.Reader = strings.TrimPrefix(r.Name, results.ProviderHuman+"_")
	}
	if arm.Arm == "" {
		arm.Arm = results.ArmUnaided
	}
	return arm, true
}

// RehearsalNote marks a rehearsal run wherever the report shows it.
const RehearsalNote = "rehearsal — not a model result"

// Partial reports whether fewer records have results than the run
// selected: the run was interrupted or is still running.
func (r *Run) Partial() bool { return r.Records != nil && r.Selected > 0 && r.Finished < r.Selected }

// ID names the run in messages and in our tables: the run name, plus the
// oracle mode when that is needed to tell runs apart.
func (r *Run) ID() string { return r.Name + " (oracle " + r.OracleMode + ")" }

// Set is every run a report reads, with the benchmark and the warnings
// collected while reading them (package runset reads it from run
// directories).
type Set struct {
	Runs     []*Run // sorted by run name (byte order), then oracle mode
	Bench    *benchmark.Benchmark
	Build    BuildInfo // the benchmark's build_info.json, when its builder wrote one
	Warnings []string
	// Mixed is "" or, when runs of different benchmarks are set side by
	// side because the caller allowed it (report
	// --allow-mixed-benchmarks), the line every table of the report
	// carries to say so.
	Mixed string
}

// BuildInfo is what a report says about how its benchmark was built,
// from the builder's build_info.json (build.md §11).
type BuildInfo struct {
	Known      bool   // build_info.json was read
	ReviewMode string // accept_all, reviews_jsonl or review_db
	Phantom    bool   // built from the phantom generator's synthetic cases
}

// Unreviewed reports a benchmark whose cases no expert reviewed.
func (b BuildInfo) Unreviewed() bool { return b.Known && b.ReviewMode == "accept_all" }
