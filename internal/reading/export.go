package reading

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/profile"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/runs"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// ProviderHuman is the provider (and backend) of a reader's run.
const ProviderHuman = results.ProviderHuman

// ErrRunExists matches an export refused because a reader's run
// directory already holds a run (pass force to replace it).
var ErrRunExists = runs.ErrRunExists

// ExportedRun is one reader's written run.
type ExportedRun struct {
	Reader   string
	Arm      string // results.ArmUnaided or results.ArmAided
	Dir      string // "" when the reader finished no record (nothing written)
	Finished int    // records with every asked turn answered
	Selected int
}

// LoadBenchmark loads the study's benchmark and checks it is the one the
// study was made with: its chexpercept.json, and the benchmark's identity
// (benchdir.OpenSums) when the study recorded one, so that a SHA256SUMS
// gone or changed since init refuses the study. It returns the sums every
// image is then checked against (nil for a benchmark without
// SHA256SUMS, with the warning line to give). A study made before
// identities were recorded is checked on chexpercept.json alone, and the
// benchmark's identity is left unknown (what the exported runs record).
func LoadBenchmark(st *Study) (*benchmark.Benchmark, *benchdir.Sums, string, error) {
	b, err := benchdir.Load(st.BenchDir)
	if err != nil {
		return nil, nil, "", err
	}
	sums, warning, err := openSums(b)
	if err != nil {
		return nil, nil, "", err
	}
	if st.Identity.Known() {
		if err := benchdir.CheckIdentity(b, st.Identity, "the study"); err != nil {
			return nil, nil, "", err
		}
	} else {
		b.Identity = benchmark.Identity{}
	}
	if b.SHA256 != st.BenchSHA256 {
		return nil, nil, "", fmt.Errorf("%s: chexpercept.json has SHA-256 %s but the study was made with %s; restore the benchmark the study was made with",
			st.BenchDir, results.ShortHash(b.SHA256), results.ShortHash(st.BenchSHA256))
	}
	return b, sums, warning, nil
}

// arm is one run written per reader: the label its run is named by, and
// which answers it holds. The run's model is the reader, whatever the
// arm: one person, whose arms the manifest's reading member tells apart.
type arm struct {
	name    string // results.ArmUnaided or results.ArmAided
	label   string // the run is human_<label>
	unaided bool   // the answers given before the model's (aided study)
}

// arms are the runs of a reader: one (unaided) in an unaided study, named
// by the reader; two in an aided study, human_<reader>_unaided and
// human_<reader>_aided.
func arms(st *Study, reader string) []arm {
	if st.Aid == nil {
		return []arm{{name: results.ArmUnaided, label: reader}}
	}
	return []arm{{name: results.ArmUnaided, label: reader + "_" + results.ArmUnaided, unaided: true},
		{name: results.ArmAided, label: reader + "_" + results.ArmAided}}
}

// Export writes the readers' runs under out, in eval's layout
// (out/human_<name>/oracle_<mode>/): results.jsonl with the reader's
// finished records in benchmark order, all_results.json, summary.json,
// manifest.json (its model is the reader's name, and its "reading"
// member names the study, the reader and the arm). An unaided study writes one run per reader; an aided study two,
// the unaided and the aided (final) answers, over the same records: those
// whose every turn has its final answer. A reader without a finished
// record gets no directory. A directory that already holds a run is
// replaced only with force; the check covers every run before anything
// is written. j, the command's job, tracks the temporary files, and
// marking the runs finished is its commit point (runs.Finish).
func Export(ctx context.Context, j *job.Job, s *Store, out string, force bool) ([]ExportedRun, error) {
	st, err := s.Study(ctx)
	if err != nil {
		return nil, err
	}
	bench, _, _, err := LoadBenchmark(st)
	if err != nil {
		return nil, err
	}
	readers, err := s.Readers(ctx)
	if err != nil {
		return nil, err
	}
	// Every target is checked before any is written: no link planted on
	// the way, no foreign files, a run only with force.
	for _, r := range readers {
		for _, a := range arms(st, r.Name) {
			if err := runs.CheckTarget(rundir.Path(out, runName(a.label), st.Oracle, nil), force); err != nil {
				return nil, err
			}
		}
	}
	// Every run is written whole before any is marked finished (one
	// commit point, runs.Finish): an export stopped part-way leaves each
	// run it wrote unfinished, for the same command to replace without
	// --force.
	var outRuns []ExportedRun
	var written []string
	var unlocks []func()
	defer func() {
		for _, unlock := range unlocks {
			unlock()
		}
	}()
	for _, r := range readers {
		for _, a := range arms(st, r.Name) {
			dir := rundir.Path(out, runName(a.label), st.Oracle, nil)
			recs, keys, err := readerRecords(ctx, s, bench, st, r, a.unaided)
			if err != nil {
				return nil, fmt.Errorf("reading db %s: %s: %w", s.Path, r.Name, err)
			}
			if len(recs) == 0 { // a run without a record is no run: report would only warn about it
				outRuns = append(outRuns, ExportedRun{Reader: r.Name, Arm: a.name, Selected: len(keys)})
				continue
			}
			m := manifest(bench, st, r.Name, runName(a.label), keys)
			m.Reading = &results.ReadingArm{Study: st.Name, Reader: r.Name, Arm: a.name}
			m.Reading.Plan = st.Plan
			if st.Blocks > 0 {
				m.Reading.Design, m.Reading.Blocks, m.Reading.Block = DesignSplitPlot, st.Blocks, st.ReaderBlock[r.Name]
			}
			if st.Aid != nil {
				m.Reading.AidRun = st.Aid.Run
			}
			var wall float64
			for _, rec := range recs {
				for _, t := range rec.Turns {
					wall += float64(t.TotalMS) / 1000
				}
			}
			unlock, err := runs.WriteUnfinished(j, dir, m, recs, len(keys), wall)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.Name, err)
			}
			unlocks = append(unlocks, unlock)
			written = append(written, dir)
			outRuns = append(outRuns, ExportedRun{Reader: r.Name, Arm: a.name, Dir: dir, Finished: len(recs), Selected: len(keys)})
		}
	}
	if err := runs.Finish(j, written...); err != nil {
		return nil, err
	}
	return outRuns, nil
}

func runName(model string) string {
	return results.RunName(ProviderHuman, model, false, false)
}

// readerRecords replays every record of a reader and returns the finished
// ones in benchmark order, with the keys of all the reader's records in
// benchmark order. With unaided, a finished record (every turn has its
// final answer) is replayed again with the answers given before the
// model's: the unaided arm of an aided study.
func readerRecords(ctx context.Context, s *Store, bench *benchmark.Benchmark, st *Study, r Reader, unaided bool) ([]*results.Record, []string, error) {
	items, err := s.Items(ctx, r.ID)
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(items, func(a, b Item) int { return a.BenchIndex - b.BenchIndex })
	var recs []*results.Record
	var keys []string
	oracle := protocol.OracleMode(st.Oracle)
	for _, it := range items {
		if it.Pos < st.Training {
			continue // a training record is never study data
		}
		rec, err := itemRecord(bench, it)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, rec.KeyID)
		ans, err := s.Answers(ctx, r.ID, it.Pos)
		if err != nil {
			return nil, nil, err
		}
		res, _, err := Replay(ctx, rec, it.BenchIndex, bench.Dir, oracle, ans)
		if err != nil {
			return nil, nil, fmt.Errorf("record %s: %w", rec.KeyID, err)
		}
		if res != nil && unaided {
			first := make([]Answer, len(ans))
			for i, a := range ans {
				first[i] = Answer{Seq: a.Seq, ShownMS: a.ShownMS, Text: a.Unaided, AnsweredMS: a.UnaidedMS}
			}
			var pend *Pending
			if res, pend, err = Replay(ctx, rec, it.BenchIndex, bench.Dir, oracle, first); err != nil {
				return nil, nil, fmt.Errorf("record %s, unaided answers: %w", rec.KeyID, err)
			}
			if pend != nil {
				return nil, nil, fmt.Errorf("record %s: turn %s has a final answer but no unaided one; the database was changed outside chexpercept", textsafe.OneLine(rec.KeyID), pend.Turn)
			}
		}
		if res != nil {
			recs = append(recs, res)
		}
	}
	return recs, keys, nil
}

// itemRecord is the benchmark record of an item, checked against the key
// stored at init.
func itemRecord(bench *benchmark.Benchmark, it Item) (*benchmark.Record, error) {
	if it.BenchIndex < 0 || it.BenchIndex >= len(bench.Records) || bench.Records[it.BenchIndex].KeyID != it.KeyID {
		return nil, errors.New("the study's records do not match the benchmark (record " + textsafe.OneLine(it.KeyID) + ")")
	}
	return bench.Records[it.BenchIndex], nil
}

// manifest is a reader's run manifest: eval's, with the reader as the
// model of provider human, and the run's name.
func manifest(bench *benchmark.Benchmark, st *Study, reader, run string, keys []string) *results.Manifest {
	created, err := time.Parse(time.RFC3339, st.CreatedAt)
	if err != nil {
		created = time.Unix(0, 0)
	}
	spec := results.RunSpec{
		RunName: run,
		Model:   runmodel.Model{Name: reader, Provider: ProviderHuman, Backend: ProviderHuman, ModelID: reader, Label: reader},
		Kind:    results.KindHuman,
		Oracle:  st.Oracle, Parse: st.Parse,
		Selection: results.Selection{Sample: st.Sample, Seed: st.Seed},
		Now:       func() time.Time { return created },
	}
	m := results.NewManifest(spec, bench, st.BenchDir, keys)
	p := profile.Default()
	m.PromptProfile = results.ProfileInfo{Name: p.Name, Texts: p.Texts(), SHA256: p.Hash()}
	m.ImageEncoding = results.ImageEncoding{Format: "png", Transport: "reading app (browser)"}
	return m
}
