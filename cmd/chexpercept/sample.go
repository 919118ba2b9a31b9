package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/source"
)

// newSampleCmd returns the command sample: the candidate cases of a source ordered and capped.
func newSampleCmd(jo job.Options) *cobra.Command {
	var (
		manifest, mimicCXR, mimicILS, ilsMasks, chexCSV, lungPattern string
		out, configPath                                              string
		seed                                                         uint64
		force                                                        bool
	)
	cmd := &cobra.Command{
		Use:   "sample (--manifest FILE | --mimic-cxr DIR --mimic-ils FILE --ils-masks DIR [--chexmask-csv FILE] [--lung-png-pattern P]) --out candidates.jsonl",
		Short: "Order and cap the candidate cases of a manifest or of MIMIC inputs into candidates.jsonl",
		Long: `sample reads a generic JSONL manifest, or converts MIMIC-CXR-JPG + MIMIC-ILS
(+ CheXmask CSV and/or lung PNGs) into manifest lines, then orders the
candidates per lesion with the seeded sampling of build.md §3 and writes
candidates.jsonl (each line with rank, source_type and sample_seed).

--mimic-cxr takes the MIMIC-CXR-JPG root (holding files/) or files/ itself.
Before writing, every image and mask the candidates reference is checked:
a regular file with a readable PNG/JPEG header (masks: PNG) of a size the
build accepts. Any failure names the first few files, writes nothing and
exits with status 2.

An existing --out is replaced only when it is recognisably a candidates
file sample wrote (empty, or its first and last lines are candidates lines
with rank, source_type and sample_seed), or with --force; any other file is
refused (exit 2) before anything is read. A symbolic link or anything but a
regular file is refused even with --force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			useMIMIC := mimicCXR != "" || mimicILS != "" || ilsMasks != ""
			switch {
			case manifest != "" && useMIMIC:
				return withExit(2, errors.New("give either --manifest or the MIMIC flags, not both"))
			case manifest == "" && !useMIMIC:
				return withExit(2, errors.New("give --manifest FILE or --mimic-cxr DIR --mimic-ils FILE --ils-masks DIR"))
			case useMIMIC && (mimicCXR == "" || mimicILS == "" || ilsMasks == ""):
				return withExit(2, errors.New("MIMIC input needs all of --mimic-cxr, --mimic-ils and --ils-masks"))
			case manifest != "" && (chexCSV != "" || lungPattern != ""):
				return withExit(2, errors.New("--chexmask-csv and --lung-png-pattern apply to MIMIC input only"))
			case out == "":
				return withExit(2, errors.New("--out is required"))
			}
			if in, same := outdir.SameFile(out, manifest, mimicILS, chexCSV, configPath); same {
				return withExit(2, fmt.Errorf("--out %s is an input of this command (%s); write the candidates to another file", out, in))
			}
			if err := checkSampleOut(out, force); err != nil {
				return withExit(2, err)
			}
			cfg := buildcfg.Default()
			if configPath != "" {
				var err error
				if cfg, err = buildcfg.Load(configPath); err != nil {
					return withExit(2, err)
				}
			}
			if changed(cmd.Flags(), "sample-seed", "seed") {
				cfg.Seed = seed
			}
			if manifest == "" && chexCSV != "" {
				f, err := safefile.Open(chexCSV, safefile.Follow)
				if err != nil {
					return withExit(2, fmt.Errorf("%s: cannot open the CheXmask CSV: %w", chexCSV, err))
				}
				_ = f.Close() // opened only to check that it can be
			}
			var cands []*source.Case
			var rep source.SampleReport
			err := runJob(cmd.Context(), jo, "sample", func(j *job.Job) error {
				var cases []*source.Case
				var stats *source.MIMICStats
				var err error
				if manifest != "" {
					if cases, _, err = source.ReadSource(manifest, cfg); err != nil {
						return withExit(2, err)
					}
				} else if cases, stats, err = source.FromMIMIC(j.Context(), mimicCXR, mimicILS, ilsMasks, chexCSV, lungPattern, cfg); err != nil {
					return withExit(2, withHints(err, flagHint{source.ErrNoLungSource, " (--chexmask-csv and/or --lung-png-pattern)"}))
				}
				if cands, rep, err = source.Sample(j.Context(), cases, cfg, cfg.Seed); err != nil {
					return err
				}
				rep.MergeMIMIC(stats)
				// A candidate whose image or mask cannot be read would only
				// fail in build, after its review: refuse now, writing
				// nothing.
				if err := source.CheckInputs(j.Context(), cands); err != nil {
					return withExit(2, err)
				}
				// A sample killed while the file was renamed into place
				// left its temporary file beside it.
				if err := atomicfile.RemoveStaleBeside(out); err != nil {
					return withExit(2, err)
				}
				return withExit(2, source.WriteCandidates(j, out, cands))
			})
			if err != nil {
				return err
			}
			rep.Print(cmd.OutOrStdout())
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d candidates to %s\n", len(cands), out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&manifest, "manifest", "", "generic JSONL manifest (build.md §2.4)")
	f.StringVar(&mimicCXR, "mimic-cxr", "", "MIMIC-CXR-JPG root or its files/ directory; the PNG directory for mimic_layout flat_png")
	f.StringVar(&mimicILS, "mimic-ils", "", "MIMIC-ILS mimic_ils_instruction_answer.json")
	f.StringVar(&ilsMasks, "ils-masks", "", "MIMIC-ILS lesion mask directory")
	f.StringVar(&chexCSV, "chexmask-csv", "", "CheXmask database CSV (.csv or .csv.gz, original resolution)")
	f.StringVar(&lungPattern, "lung-png-pattern", "", "lung PNG path pattern with {image_id} and {side}")
	f.StringVar(&out, "out", "", "candidates.jsonl to write")
	namedSeedFlag(f, &seed, "sample-seed", "sampling seed: which candidates are drawn (default: config key seed, else 0)")
	f.StringVar(&configPath, "config", "", "YAML configuration (build.md §2.5)")
	f.BoolVar(&force, "force", false, "replace an existing --out that is not a candidates file sample wrote")
	return cmd
}

// checkSampleOut refuses an existing regular file out that is not
// recognisably sample's own candidates.jsonl, unless force: sample never
// replaces a file it did not write. A link or other non-regular file is
// left to the write, which refuses it whatever force says.
func checkSampleOut(out string, force bool) error {
	st, err := os.Lstat(out)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && (force || !st.Mode().IsRegular())) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	f, err := safefile.Open(out, safefile.NoFollow)
	if err != nil {
		return fmt.Errorf("--out %s: %w", out, safefile.Reason(err))
	}
	defer func() { _ = f.Close() }() // read-only
	if st, err = f.Stat(); err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	if err := source.CheckCandidatesEnds(f, st.Size()); err != nil {
		return fmt.Errorf("--out %s exists and is not a candidates file sample wrote (%w); sample never replaces another file unless told: pass --force, or write elsewhere", out, err)
	}
	return nil
}
