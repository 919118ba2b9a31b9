package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/reading"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// newReadCmd returns the command read: the reading study, human readers
// under the models' protocol (docs/reading.md).
func newReadCmd(jo job.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "read",
		Short: "Reading study: human readers take the benchmark in the browser, exported as runs",
		Long: `read measures human readers (radiologists) on the benchmark under the same
protocol as the models (docs/reading.md). "init" creates the study with
sign-in tokens, "serve" runs the reading web app, "export" writes one run
directory per reader in eval's layout (provider human), which report reads
like any model's run.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(readInitCmd(jo), readServeCmd(), readExportCmd(jo))
	return cmd
}

func readInitCmd(jo job.Options) *cobra.Command {
	var benchDir, db, oracle, study, aid, layout, planPath string
	var aidBaseline bool
	var n, sample, blocks, training int
	var seed uint64
	cmd := &cobra.Command{
		Use:   "init --benchmark BENCH_DIR --db READERS_DB --readers N [--sample K --seed S] [--oracle none|implicit|explicit] [--aid RUN_DIR [--aid-allow-baseline]] [--study NAME] [--design crossed|split-plot --blocks B] [--plan PLAN.yaml] [--training N]",
		Short: "Create a reading study: the records, each reader's order, sign-in tokens",
		Long: `init selects the benchmark's records (all, or --sample K of them drawn as
eval --sample K --sample-seed S draws them, stratified by lesion and path), gives
every reader the same records in an order shuffled per reader (seeded by
--seed and the reader's name), and prints one "reader NAME TOKEN" line per
reader and one "admin TOKEN" line. The tokens are shown only now; the
database keeps only their hashes. --oracle is the oracle mode the readers
get, as for models (default implicit).

--aid RUN_DIR makes a sequential aided study: on every question the reader
answers on their own, then sees the answer the model of that run gave to
the same question of the same record, and confirms or changes theirs. The
run must be a finished model run of this benchmark (its identity) and
oracle mode that holds every selected record, and every answer it stores
must be the one its raw reply parses to under its own parse rules; a
baseline policy's run (the oracle policy answers with the ground truth) is
refused unless --aid-allow-baseline. --study names the study in the exported runs' manifests (default:
the database file's name without its extension).

--design split-plot --blocks B splits the readers and the records into B
blocks (by --seed, as evenly as they go): the readers of a block read that
block's records only, in every arm, and the analysis estimates the readers'
covariances within blocks (docs/reading.md). The default, crossed, gives every
reader every record.

--plan PLAN.yaml fixes the analysis plan before the first record is read: the
primary endpoint (path and stage, and for a comparison a model run), figure
of merit, analysis (rrrc by default), alpha, design, planned readers and
records, and a non-inferiority margin. It is stored in the database and in
every exported run's manifest; the report states it first and gives the
primary result as such (docs/reading.md). chexpercept mrmc plan --write-plan
writes one.

--training N gives each reader N training records first: records of the
benchmark outside the study's selection (drawn by --seed, the same for every
reader), after each of whose questions the page shows the right answer. They
are never exported: the study's runs hold its records only. Not with --aid.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if benchDir == "" || db == "" {
				return withExit(2, errors.New("--benchmark and --db are required"))
			}
			if n < 1 || n > reading.MaxReaders {
				return withExit(2, fmt.Errorf("--readers must be 1 to %d, got %d", reading.MaxReaders, n))
			}
			mode, err := protocol.ParseOracleMode(oracle)
			if err != nil {
				return withExit(2, fmt.Errorf("--oracle: %w", err))
			}
			var samp *int
			if cmd.Flags().Changed("sample") {
				if sample < 1 {
					return withExit(2, fmt.Errorf("--sample must be at least 1, got %d", sample))
				}
				samp = &sample
			}
			splitBlocks := 0
			switch layout {
			case "crossed":
				if cmd.Flags().Changed("blocks") {
					return withExit(2, errors.New("--blocks: only with --design split-plot"))
				}
			case reading.DesignSplitPlot:
				if blocks < 1 {
					return withExit(2, fmt.Errorf("--blocks %d: a split-plot study needs 1 block or more", blocks))
				}
				splitBlocks = blocks
			default:
				return withExit(2, fmt.Errorf("--design %q: want crossed or split-plot", layout))
			}
			var plan *results.StudyPlan
			if planPath != "" {
				f, err := safefile.Open(planPath, safefile.Follow)
				if err != nil {
					return withExit(2, fmt.Errorf("--plan %s: %w", planPath, safefile.Reason(err)))
				}
				plan, err = reading.ParsePlan(f, planPath)
				_ = f.Close()
				if err != nil {
					return withExit(2, err)
				}
			}
			bench, err := benchdir.Load(benchDir)
			if err != nil {
				return withExit(2, err)
			}
			if w := readersWarning(n); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			design := "unaided"
			if aid != "" {
				design = "sequential aided by " + aid
			}
			// The tokens are printed before the database is published, and
			// the job covers both (docs/reading.md).
			return runJobNote(cmd.Context(), jo, "read init", voidTokensNote, func(j *job.Job) error {
				var printed bool
				deliver := func(creds []reading.Credential) error {
					var tokens strings.Builder
					for _, c := range creds {
						if c.Name == reading.AdminName {
							fmt.Fprintf(&tokens, "admin %s\n", c.Token)
						} else {
							fmt.Fprintf(&tokens, "reader %s %s\n", c.Name, c.Token)
						}
					}
					if err := writeTokens(j, cmd, db, tokens.String()); err != nil {
						return err
					}
					printed = true
					return nil
				}
				_, records, err := reading.Init(j.Context(), reading.InitOptions{Bench: bench, DB: db, Readers: n, Sample: samp, Seed: seed, Oracle: mode,
					Study: study, Aid: aid, AidAllowBaseline: aidBaseline, Blocks: splitBlocks, Plan: plan, Training: training, Log: cmd.ErrOrStderr(), Deliver: deliver, Job: j})
				if ae, ok := errors.AsType[*reading.AidError](err); ok {
					err = fmt.Errorf("--aid %s: %w", ae.Dir, ae.Err)
				}
				if err != nil {
					return voidTokens(withExit(2, err), printed)
				}
				if splitBlocks > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "created %s: %d records in %d blocks for %d readers (split-plot: each reader reads its block's records), oracle %s, %s. Keep the tokens above; they are not stored.\n", db, records, splitBlocks, n, mode, design)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "created %s: %d records for each of %s, oracle %s, %s. Keep the tokens above; they are not stored.\n", db, records, plural(n, "reader"), mode, design)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "next: chexpercept read serve --db %s   (readers sign in at its URL with their tokens)\n", textsafe.ShellQuote(db))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&benchDir, "benchmark", "", "benchmark directory (holds chexpercept.json)")
	f.StringVar(&db, "db", "", "reading database to create (must not exist)")
	f.IntVar(&n, "readers", 0, "number of readers N")
	f.IntVar(&sample, "sample", 0, "a stratified sample of K records (default: every record)")
	// --seed is the name; --sample-seed, eval's name for the sample's
	// seed, works too.
	f.Var((*seedValue)(&seed), "seed", "seed of the sample and of each reader's order")
	hiddenAlias(f, "seed", "sample-seed")
	f.StringVar(&oracle, "oracle", string(protocol.OracleImplicit), "oracle mode: none, implicit or explicit")
	f.StringVar(&aid, "aid", "", "a model run directory: a sequential aided study shows its answers")
	f.BoolVar(&aidBaseline, "aid-allow-baseline", false, "accept a baseline policy's run (random, first, oracle) as the aid")
	f.StringVar(&study, "study", "", "the study's name in the runs' manifests (default: the database's file name)")
	f.StringVar(&layout, "design", "crossed", "crossed (every reader reads every record) or split-plot")
	f.IntVar(&training, "training", 0, "training records each reader reads first, with the right answer after each question; never exported")
	f.StringVar(&planPath, "plan", "", "the study's analysis plan (YAML, docs/reading.md), fixed before the first record is read")
	f.IntVar(&blocks, "blocks", 1, "with --design split-plot: the number of blocks of readers and records")
	return cmd
}

// readersWarning is "" or what a study of n readers cannot give: the
// report's reader-study analysis needs analysis.MinMRMCReaders readers,
// its verdict on the readers analysis.MinReaders.
func readersWarning(n int) string {
	switch {
	case n < analysis.MinMRMCReaders:
		return fmt.Sprintf("--readers %d: a reader study needs at least %d readers for its analysis (with fewer, "+
			"the readers' rows of the report are N/A) and at least %d for a verdict", n, analysis.MinMRMCReaders, analysis.MinReaders)
	case n < analysis.MinReaders:
		return fmt.Sprintf("--readers %d: the report analyses the readers, but a verdict on them needs at least %d readers", n, analysis.MinReaders)
	}
	return ""
}

// thenWrite writes to w and, after its first write, calls then.
type thenWrite struct {
	w    io.Writer
	then func()
	done bool
}

func (t *thenWrite) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if !t.done {
		t.done = true
		t.then()
	}
	return n, err
}

// plural is "1 reader", "2 readers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func readServeCmd() *cobra.Command {
	var db, listen, certFile, keyFile string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "serve --db READERS_DB [--listen 127.0.0.1:PORT] [--tls-cert FILE --tls-key FILE]",
		Short: "Serve the reading web app",
		Long: `serve runs the reading web app on --listen (loopback by default). Readers
sign in with their token (GET /login, POST /login with the form field token)
and answer their records turn by turn; every answer is stored before the
next question is shown, and a reader who comes back continues at the first
unanswered question. The admin sees each reader's progress. Sign-in,
sessions, CSRF and throttling are the review app's (see review serve).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if db == "" {
				return withExit(2, errors.New("--db is required"))
			}
			if (certFile == "") != (keyFile == "") {
				return withExit(2, errors.New("give both --tls-cert and --tls-key, or neither"))
			}
			useTLS := certFile != ""
			if err := checkListen(cmd, listen, useTLS); err != nil {
				return err
			}
			st, err := reading.Open(db)
			if err != nil {
				return withExit(2, err)
			}
			defer func() { err = closeChecked(err, st) }()
			app, err := reading.NewServer(cmd.Context(), st)
			if err != nil {
				return withExit(2, err)
			}
			app.Secure = useTLS
			if app.Warning != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", app.Warning)
			}
			if !quiet {
				app.Log = log.New(cmd.ErrOrStderr(), "read: ", log.LstdFlags)
			}
			// Under the URL, once it is served: the next command in full,
			// and how to stop.
			next := fmt.Sprintf("export the finished records with: chexpercept read export --db %s --out results/\n"+
				"stop the server with Ctrl-C (every answer is already stored)\n", textsafe.ShellQuote(reading.ExportDB(db)))
			cmd.SetOut(&thenWrite{w: cmd.OutOrStdout(), then: func() { fmt.Fprint(cmd.ErrOrStderr(), next) }})
			return serveApp(cmd, app.Handler(), listen, certFile, keyFile)
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", "reading database (from read init)")
	f.StringVar(&listen, "listen", "127.0.0.1:8081", "address to listen on (loopback by default)")
	f.StringVar(&certFile, "tls-cert", "", "TLS certificate (PEM) to serve HTTPS")
	f.StringVar(&keyFile, "tls-key", "", "TLS private key (PEM)")
	f.BoolVar(&quiet, "quiet", false, "do not log sign-ins and answers")
	return cmd
}

func readExportCmd(jo job.Options) *cobra.Command {
	var db, out string
	var force bool
	cmd := &cobra.Command{
		Use:   "export --db READERS_DB --out DIR [--force]",
		Short: "Write the readers' run directories, in eval's layout (provider human)",
		Long: `export replays each reader's finished records through the protocol's scorer
and writes DIR/human_<reader>/oracle_<mode>/ with results.jsonl,
all_results.json, summary.json and manifest.json, as eval writes them
(provider human, model = the reader's name). An aided study writes two runs
per reader, DIR/human_<reader>_unaided/ and DIR/human_<reader>_aided/ (the
answers before and after the model's), over the same records. Each
manifest's "reading" member names the study, the reader, the arm and the
aid run. Records a reader has not finished are left out (the summary counts
them as not done). A run directory that already holds a run is replaced
only with --force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if db == "" || out == "" {
				return withExit(2, errors.New("--db and --out are required"))
			}
			st, err := reading.Open(db)
			if err != nil {
				return withExit(2, err)
			}
			defer func() { _ = st.Close() }() // export only reads the database
			var runs []reading.ExportedRun
			err = runJob(cmd.Context(), jo, "read export", func(j *job.Job) error {
				var err error
				runs, err = reading.Export(j.Context(), j, st, out, force)
				return err
			})
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			if errors.Is(err, reading.ErrRunExists) {
				return withExit(2, fmt.Errorf("%w; pass --force to replace it", err))
			}
			if err != nil {
				return withExit(2, err)
			}
			for _, r := range runs {
				if r.Dir == "" {
					fmt.Fprintf(cmd.OutOrStdout(), "%s (%s): no record finished (of %d), nothing written\n", r.Reader, r.Arm, r.Selected)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s (%s): %d of %d records finished → %s\n", r.Reader, r.Arm, r.Finished, r.Selected, r.Dir)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", "reading database")
	f.StringVar(&out, "out", "", "results directory (one run directory per reader is written under it)")
	f.BoolVar(&force, "force", false, "replace a reader's earlier export")
	return cmd
}
