package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/phantom"
)

// newPhantomCmd returns the command phantom: synthetic radiographs with exact masks.
func newPhantomCmd(jo job.Options) *cobra.Command {
	var (
		out     string
		n       int
		seed    uint64
		workers int
		config  string
	)
	cmd := &cobra.Command{
		Use:   "phantom --out DIR --cases-per-lesion N --phantom-seed S",
		Short: "Generate synthetic chest radiographs with lung, heart and lesion masks",
		Long: `Generate synthetic frontal chest radiographs (1024×1024 grey PNGs) with exact
right-lung, left-lung, heart and lesion masks, N positive and N negative cases
for each of the seven lesions, a source manifest (DIR/manifest.jsonl, the
generic JSONL format) and a contact sheet (DIR/contact_sheet.png).
The same seed gives byte-identical output whatever the number of workers.

With --config, the lesions are those the build configuration selects
(its lesions key, and any lesion_definitions), each drawn with its
definition's phantom shape family (docs/adding-a-lesion.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("phantom: --out DIR is required")
			}
			if !cmd.Flags().Changed("cases-per-lesion") {
				return errors.New("phantom: --cases-per-lesion N is required")
			}
			w := cmd.OutOrStdout()
			opt := phantom.Options{OutDir: out, CasesPerLesion: n, Seed: seed, Workers: workers, Progress: w}
			if config != "" {
				cfg, err := buildcfg.Load(config)
				if err != nil {
					return fmt.Errorf("phantom: %w", err)
				}
				set := cfg.LesionSet()
				for _, l := range cfg.Lesions {
					d, _ := set.Def(l)
					opt.Lesions = append(opt.Lesions, d)
				}
			}
			unlock, err := lockOutDir(out)
			if err != nil {
				return err
			}
			defer unlock()
			var sum phantom.Summary
			err = runJob(cmd.Context(), jo, "phantom", func(j *job.Job) error {
				var err error
				opt.Job = j
				sum, err = phantom.Generate(j.Context(), opt)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "phantom: wrote %d cases (%d positive, %d negative), %d PNG files\n",
				sum.Cases, sum.Positives, sum.Negatives, sum.Files)
			fmt.Fprintf(w, "phantom: manifest %s\n", sum.Manifest)
			fmt.Fprintf(w, "phantom: contact sheet %s (first %d cases per lesion and label)\n", sum.Sheet, sum.SheetPer)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "output directory")
	f.IntVar(&n, "cases-per-lesion", 0, "positive and negative cases per lesion (each)")
	namedSeedFlag(f, &seed, "phantom-seed", "seed of the synthetic radiographs")
	f.IntVar(&workers, "workers", 0, "worker goroutines (default: number of CPUs)")
	f.StringVar(&config, "config", "", "build configuration (YAML) whose lesions to generate")
	return cmd
}
