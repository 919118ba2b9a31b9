package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/review"
	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/webapp"
)

// newReviewCmd returns the command review: the expert review of candidate
// cases (build.md §4). Its --config is a persistent flag, which the
// subcommands that read a source look up (reviewConfig).
func newReviewCmd(jo job.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "review",
		Short: "Expert review of candidate cases: web app, review packs, import and export",
		Long: `review lets experts accept or reject candidate cases before a build
(build.md §4). "init" creates the review database with sign-in tokens and
assignments, "serve" runs the web app, "export" writes reviews.jsonl or the
reference sheets, "pack" writes offline review packs (images and sheets),
"import" reads filled sheets into reviews.jsonl or the database.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().String("config", "", "build configuration whose lesion_definitions the source uses (docs/adding-a-lesion.md)")
	cmd.AddCommand(reviewInitCmd(jo), reviewServeCmd(), reviewExportCmd(jo), reviewPackCmd(jo), reviewImportCmd(jo))
	return cmd
}

// reviewConfig is review's --config as cmd sees it (the parent's
// persistent flag; "" for a subcommand run on its own): lesions outside
// the seven are read under its definitions.
func reviewConfig(cmd *cobra.Command) string {
	if f := cmd.Flag("config"); f != nil {
		return f.Value.String()
	}
	return ""
}

// readReviewSource reads a manifest or candidates file with every lesion
// and its lines in file order (reviews cover every line; a build samples
// from them later). configPath is review's --config.
func readReviewSource(path, configPath string) ([]*source.Case, error) {
	cfg := buildcfg.Default()
	if configPath != "" {
		var err error
		if cfg, err = buildcfg.Load(configPath); err != nil {
			return nil, err
		}
	}
	cfg.Lesions = cfg.LesionSet().Names()
	cases, _, err := source.ReadSource(path, cfg)
	return cases, err
}

func reviewInitCmd(jo job.Options) *cobra.Command {
	var src, db, only string
	var n, k, workers int
	var seed uint64
	cmd := &cobra.Command{
		Use:   "init --source FILE --review-db REVIEW_DB --reviewers N [--overlap K] [--assign-seed S]",
		Short: "Create a review database: cases with digests, K-of-N assignments, sign-in tokens",
		Long: `init reads a generic manifest or candidates.jsonl (every line, in file
order), records each case's image and candidate-mask digests, assigns each
case to K of the N reviewers (balanced within each lesion, seeded), and
prints one "reviewer NAME TOKEN" line per reviewer and one "admin TOKEN"
line. The tokens are shown only now; the database keeps only their hashes.

--only FILE (a report's flagged_items.csv) opens an item-health re-review
round: only the flagged cases are reviewed, each shown with its flags and
the models' modal answer, and decided keep, fix or drop (docs/item-health.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if src == "" || db == "" {
				return withExit(2, errors.New("--source and --review-db are required"))
			}
			if n < 1 {
				return withExit(2, fmt.Errorf("--reviewers must be at least 1, got %d", n))
			}
			if k < 1 || k > n {
				return withExit(2, fmt.Errorf("--overlap must be between 1 and --reviewers (%d), got %d", n, k))
			}
			cases, err := readReviewSource(src, reviewConfig(cmd))
			if err != nil {
				return withExit(2, err)
			}
			var flags []review.ItemFlag
			if only != "" {
				if flags, err = review.ReadFlagged(only); err != nil {
					return withExit(2, err)
				}
				if cases, err = review.OnlyFlagged(cases, flags); err != nil {
					return withExit(2, fmt.Errorf("--only %s: %w", only, err))
				}
			}
			// The tokens are printed before the database is published, and
			// the job covers both (docs/building.md).
			return runJobNote(cmd.Context(), jo, "review init", voidTokensNote, func(j *job.Job) error {
				var printed bool
				deliver := func(creds []review.Credential) error {
					var tokens strings.Builder
					for _, c := range creds {
						if c.Name == review.AdminName {
							fmt.Fprintf(&tokens, "admin %s\n", c.Token)
						} else {
							fmt.Fprintf(&tokens, "reviewer %s %s\n", c.Name, c.Token)
						}
					}
					if err := writeTokens(j, cmd, db, tokens.String()); err != nil {
						return err
					}
					printed = true
					return nil
				}
				_, stored, err := review.Init(db, cases, review.InitOptions{Reviewers: n, Overlap: k, Seed: seed, Workers: workers,
					Source: src, Warn: cmd.ErrOrStderr(), Flags: flags, Deliver: deliver, Job: j})
				if err != nil {
					return voidTokens(withExit(2, err), printed)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "created %s: %d cases, %d reviewers, overlap %d. Keep the tokens above; they are not stored.\n", db, stored, n, k)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&src, "source", "", "generic manifest or candidates.jsonl")
	f.StringVar(&db, "review-db", "", "review database to create (must not exist)")
	f.StringVar(&only, "only", "", "a report's flagged_items.csv: an item-health re-review round of the flagged cases only")
	f.IntVar(&n, "reviewers", 6, "number of reviewers N")
	f.IntVar(&k, "overlap", 1, "reviewers per case K (1 ≤ K ≤ N)")
	namedSeedFlag(f, &seed, "assign-seed", "seed of the assignment of cases to reviewers")
	f.IntVar(&workers, "workers", 0, "digest workers (default: number of CPUs)")
	return cmd
}

// writeTokens prints the sign-in tokens of the database db that init has
// made whole under a temporary name and not yet published. The tokens
// exist nowhere else: when they cannot be written (a full disk, a closed
// pipe), the error makes init abandon the database, which no one could
// sign in to, so the same command can be run again. A job stopped by now
// prints none: its database will not be published.
func writeTokens(j *job.Job, cmd *cobra.Command, db, tokens string) error {
	j.Hook("tokens", db)
	if err := j.Context().Err(); err != nil {
		return err
	}
	if _, err := io.WriteString(cmd.OutOrStdout(), tokens); err != nil {
		// %v: the error does not wrap EPIPE, so main prints it even
		// when stdout is a closed pipe (the tokens are lost).
		return withExit(2, fmt.Errorf("write the sign-in tokens: %v; %s is not created (run init again)", safefile.Reason(err), db))
	}
	return nil
}

// voidTokensNote ends init's interrupted line: a signal that stops init
// after its tokens were printed leaves no database they open.
const voidTokensNote = "; sign-in tokens printed above, if any, are void"

// voidTokens adds to the error of an init that failed after printing its
// tokens (its database could not be published) that they are void.
func voidTokens(err error, printed bool) error {
	if err == nil || !printed || errors.Is(err, errSilent) {
		return err
	}
	return withExit(2, fmt.Errorf("%w; the sign-in tokens printed above are void (run init again)", err))
}

// isLoopbackHost reports whether host names the loopback interface.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func reviewServeCmd() *cobra.Command {
	var db, listen, certFile, keyFile string
	var quiet, readOnly bool
	cmd := &cobra.Command{
		Use:   "serve --review-db REVIEW_DB [--listen 127.0.0.1:PORT] [--tls-cert FILE --tls-key FILE] [--read-only]",
		Short: "Serve the review web app",
		Long: `serve runs the review web app on --listen (loopback by default). Reviewers
sign in with their token (POST /login, form field token) and see only their
own queue; the admin sees progress, agreement and disagreements, resolves
cases and locks the review. Serve over TLS (--tls-cert/--tls-key) or behind
a TLS proxy whenever the address is reachable from other machines.

Repeated wrong tokens from one client address are slowed down: after 5
tries without a correct token, one more try every 3 seconds (HTTP 429
meanwhile), and the log gets one summary line per minute instead of a line
per failure. Behind a TLS proxy on this machine, the client address is the
last X-Forwarded-For entry.

--read-only opens the database without writing to it (also a read-only file
or directory): only the admin can sign in, to see progress, agreement and
disagreements; decisions, resolutions and the lock are refused with 403.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if db == "" {
				return withExit(2, errors.New("--review-db is required"))
			}
			if (certFile == "") != (keyFile == "") {
				return withExit(2, errors.New("give both --tls-cert and --tls-key, or neither"))
			}
			useTLS := certFile != ""
			if err := checkListen(cmd, listen, useTLS); err != nil {
				return err
			}
			open := review.Open
			if readOnly {
				open = review.OpenReadOnly
			}
			st, err := open(db)
			if errors.Is(err, review.ErrNotWritable) {
				return withExit(2, fmt.Errorf("%w; --read-only serves the admin's progress view without writing", err))
			}
			if err != nil {
				return withExit(2, err)
			}
			defer func() { err = closeChecked(err, st) }()
			app, err := review.NewServer(st)
			if err != nil {
				return withExit(2, err)
			}
			app.Secure = useTLS
			if !quiet {
				app.Log = log.New(cmd.ErrOrStderr(), "review: ", log.LstdFlags)
			}
			// The cases' images are built before the server listens (as
			// many as three quarters of the image memory holds), so that
			// no reviewer waits for a first build.
			if err := app.Prebuild(cmd.Context()); err != nil {
				app.Log.Printf("preparing the images: %v", err)
			}
			return serveApp(cmd, app.Handler(), listen, certFile, keyFile)
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "review-db", "", "review database (from review init)")
	f.StringVar(&listen, "listen", "127.0.0.1:8080", "address to listen on (loopback by default)")
	f.StringVar(&certFile, "tls-cert", "", "TLS certificate (PEM) to serve HTTPS")
	f.StringVar(&keyFile, "tls-key", "", "TLS private key (PEM)")
	f.BoolVar(&quiet, "quiet", false, "do not log sign-ins and decisions")
	f.BoolVar(&readOnly, "read-only", false, "open the database read-only: the admin's progress view, no changes")
	return cmd
}

func reviewExportCmd(jo job.Options) *cobra.Command {
	var db, jsonl, csvDir, outcomes string
	var force bool
	cmd := &cobra.Command{
		Use:   "export --review-db REVIEW_DB (--reviews OUT | --csv OUT_DIR) [--outcomes FILE]",
		Short: "Export the decisions as reviews.jsonl or as the reference's sheets",
		Long: `export --reviews writes one resolved line per case with any decision
(build.md §4): accept, reject, disputed or unsure, with the reviewers, the
time of the deciding action and the image and mask digests. export --csv
writes OUT_DIR/positive.csv and OUT_DIR/negative.csv in the reference's
layouts, optimal? = 1 for accepted cases. In an item-health round (init
--only), --outcomes FILE also writes the keep / fix / drop outcome of
every flagged question (docs/item-health.md).

An existing --reviews or --outcomes file is replaced only with --force (it may
be a review log a round was meant to be appended to), and never when it is
the review database, a directory or a FIFO. --csv writes only into
a new or empty directory or an earlier export (marked by
.chexpercept-review-sheets), or with --force. Refusals exit 2 before
anything is written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if db == "" || (jsonl != "" && csvDir != "") || (jsonl == "" && csvDir == "" && outcomes == "") {
				return withExit(2, errors.New("give --review-db and exactly one of --reviews OUT, --csv OUT_DIR (and/or --outcomes FILE)"))
			}
			if csvDir != "" {
				unlock, err := lockOutDir(csvDir)
				if err != nil {
					return err
				}
				defer unlock()
			}
			if err := checkExportTargets(db, jsonl, csvDir, outcomes, force); err != nil {
				return withExit(2, err)
			}
			// An export killed while a file was renamed into place left its
			// temporary file beside it ("<file>.tmp-<digits>").
			for _, p := range []string{jsonl, outcomes} {
				if p != "" {
					if err := atomicfile.RemoveStaleBeside(p); err != nil {
						return withExit(2, err)
					}
				}
			}
			st, err := review.OpenReadOnly(db)
			if err != nil {
				return withExit(2, err)
			}
			defer func() { _ = st.Close() }() // read-only
			return runJob(cmd.Context(), jo, "review export", func(j *job.Job) error {
				// The last output file (--reviews, --outcomes) is the commit
				// point (j.Commit): a signal that comes later lets it be
				// written, since its rerun would refuse the file without
				// --force; the job's context no longer ends then. The --csv
				// folder, which its rerun rewrites, has none.
				ctx := j.Context()
				commit := j.Commit
				if outcomes != "" {
					if jsonl == "" && csvDir == "" {
						if err := commit(); err != nil {
							return err
						}
					}
					n, err := st.ExportOutcomes(ctx, j, outcomes)
					if err != nil {
						return withExit(2, fmt.Errorf("--outcomes %s: %w", outcomes, err))
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d flagged question(s)\n", outcomes, n)
					if jsonl == "" && csvDir == "" {
						return nil
					}
				}
				if jsonl != "" {
					if err := commit(); err != nil {
						return err
					}
					n, err := st.ExportJSONL(ctx, j, jsonl)
					if err != nil {
						return withExit(2, err)
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d resolved case(s)\n", jsonl, n)
					return nil
				}
				if err := st.ExportCSV(ctx, j, csvDir); err != nil {
					return withExit(2, err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s/positive.csv and %s/negative.csv\n", csvDir, csvDir)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "review-db", "", "review database")
	f.StringVar(&jsonl, "reviews", "", "reviews.jsonl to write")
	hiddenAlias(f, "reviews", "jsonl")
	f.StringVar(&csvDir, "csv", "", "directory for positive.csv and negative.csv")
	f.StringVar(&outcomes, "outcomes", "", "item-health round: CSV of each flagged question's keep / fix / drop outcome")
	f.BoolVar(&force, "force", false, "replace existing output files")
	return cmd
}

// checkExportTargets refuses, before anything is written, an existing
// --reviews or --outcomes file without force (it may be the main review log
// a round's export was meant to be appended to), and a --csv directory
// that is neither new, empty nor an earlier export (its positive.csv may
// be a filled sheet). Even --force never replaces the review database
// itself or one of its -wal, -shm, -journal files (compared by identity:
// outdir.SameFile), the other output, or what is not a regular file (a
// symbolic link, a directory, a FIFO).
func checkExportTargets(db, jsonl, csvDir, outcomes string, force bool) error {
	if jsonl != "" && outcomes != "" {
		if _, same := outdir.SameFile(jsonl, outcomes); same {
			return fmt.Errorf("--reviews %s and --outcomes %s name the same file", jsonl, outcomes)
		}
	}
	for _, t := range []struct{ flag, path string }{{"--reviews", jsonl}, {"--outcomes", outcomes}} {
		if t.path == "" {
			continue
		}
		if f, same := outdir.SameFile(t.path, append([]string{db}, appdb.SideFiles(db)...)...); same {
			return fmt.Errorf("%s %s is the review database or one of its files (%s)", t.flag, t.path, f)
		}
		li, err := os.Lstat(t.path)
		if err != nil {
			continue
		}
		if m := li.Mode(); !m.IsRegular() {
			kind := "a directory"
			switch {
			case m&os.ModeSymlink != 0:
				kind = "a symbolic link (export writes a new file in its place only where there is none or a regular file)"
			case !m.IsDir():
				kind = "a special file (" + m.Type().String() + ")"
			}
			return fmt.Errorf("%s %s is %s, not a file", t.flag, t.path, kind)
		}
		if !force {
			return fmt.Errorf("%s %s already exists; export never replaces a file unless told: pass --force, or write elsewhere (to add a round to a review log, export it to its own file and append that)", t.flag, t.path)
		}
	}
	if csvDir == "" {
		return nil
	}
	st, names, err := outdir.Look(csvDir, review.SheetsMarker)
	if err != nil {
		return fmt.Errorf("--csv: %w", err)
	}
	if st == outdir.Other && !force {
		return outdir.Foreign(csvDir, names, "review export --csv", review.SheetsMarker)
	}
	if st != outdir.Absent && st != outdir.Empty {
		if err := outdir.CheckTree(csvDir); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	return nil
}

func reviewPackCmd(jo job.Options) *cobra.Command {
	var src, out string
	var n, workers int
	cmd := &cobra.Command{
		Use:   "pack --source FILE --out DIR [--reviewers N]",
		Short: "Write offline review packs: review images and review_sheet.csv per annotator, lesion and label",
		Long: `pack writes, for each lesion and label of the source (every line, in file
order), review images and a review_sheet.csv, dealing rows round-robin to N
reviewers: DIR/annotator_A/<lesion>/<label>/, annotator_B, … Positive images
show the radiograph beside it with the candidate mask in red; negatives show
the radiograph. Fill the sheets' decision column and read them back with
"review import". DIR must be new, empty or an unfinished pack: pack writes
its marker .chexpercept-review-pack first, so a pack stopped part-way (a
failed write, Ctrl-C, a kill) is replaced by the same command run again. A
finished pack (its sheets may be filled in) and any other non-empty DIR are
refused with exit status 2; delete a finished pack to write it again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if src == "" || out == "" {
				return withExit(2, errors.New("--source and --out are required"))
			}
			fl := cmd.Flags()
			if fl.Changed("reviewers") && fl.Changed("annotators") {
				return withExit(2, errors.New("--annotators is the old name of --reviewers; give only --reviewers"))
			}
			if n < 1 {
				return withExit(2, fmt.Errorf("--reviewers must be at least 1, got %d", n))
			}
			cases, err := readReviewSource(src, reviewConfig(cmd))
			if err != nil {
				return withExit(2, err)
			}
			unlock, err := lockOutDir(out)
			if err != nil {
				return err
			}
			defer unlock()
			var sum review.PackSummary
			err = runJob(cmd.Context(), jo, "review pack", func(j *job.Job) error {
				var err error
				sum, err = review.Pack(j.Context(), cases, out, review.PackOptions{Reviewers: n, Workers: workers, Warn: cmd.ErrOrStderr(), Job: j})
				return withExit(2, err)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d case(s) in %d sheet(s), %d skipped\n", out, sum.Cases, sum.Sheets, sum.Skipped)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&src, "source", "", "generic manifest or candidates.jsonl")
	f.StringVar(&out, "out", "", "output directory (new, empty or an unfinished pack)")
	f.IntVar(&n, "reviewers", 6, "number of reviewers N (one annotator_<X> folder each)")
	// --annotators was this flag's name; review init has always said --reviewers.
	f.IntVar(&n, "annotators", 6, "old name of --reviewers")
	_ = f.MarkDeprecated("annotators", "use --reviewers (the same number, as in review init)")
	f.IntVar(&workers, "workers", 0, "image workers (default: number of CPUs)")
	return cmd
}

func reviewImportCmd(jo job.Options) *cobra.Command {
	var sheets []string
	var src, reviews, db, reviewer string
	var legacy bool
	cmd := &cobra.Command{
		Use:   "import --csv SHEET... [--source FILE] (--reviews FILE | --review-db FILE) [--reviewer NAME] [--legacy-nonempty-accept]",
		Short: "Read filled review sheets into reviews.jsonl or the review database",
		Long: `import reads filled sheets (review_sheet.csv or the reference's
positive/negative layouts, recognised by the header) and appends one line
per decided row. decision / optimal? cells: y, yes, 1, true, accept, x →
accept; n, no, 0, false, reject → reject; empty → no review; anything else
is an error (nothing is imported then). Rows without digests (reference
layouts) need --source, the manifest or candidates the sheet was made from:
the current inputs' digests are recorded, so later changes make the
decision stale. --legacy-nonempty-accept applies the reference's rule to
optimal? cells: any non-empty cell accepts. The reviewer is --reviewer,
else the sheet's nearest annotator_<X> folder, else "import".`,
		RunE: func(cmd *cobra.Command, args []string) error {
			sheets = append(sheets, args...)
			if len(sheets) == 0 {
				return withExit(2, errors.New("--csv SHEET is required"))
			}
			if (reviews == "") == (db == "") {
				return withExit(2, errors.New("give exactly one of --reviews FILE, --review-db FILE"))
			}
			if reviewer != "" {
				if err := reviewlog.CheckName("--reviewer", reviewer); err != nil {
					return withExit(2, err)
				}
			}
			opt := review.ImportOptions{Reviewer: reviewer, Legacy: legacy, Now: time.Now()}
			if src != "" {
				cases, err := readReviewSource(src, reviewConfig(cmd))
				if err != nil {
					return withExit(2, err)
				}
				opt.Source = map[string]*source.Case{}
				for _, c := range cases {
					opt.Source[c.KeyID()] = c
				}
			}
			lines, err := review.ReadSheets(sheets, opt)
			if err != nil {
				return withExit(2, withHints(err, flagHint{review.ErrNeedsSource, "\n  (pass --source FILE, the manifest or candidates the sheets were made from, for the rows without digests)"}))
			}
			// Nothing is written before this point, and the import is
			// its commit point (j.Commit): a signal that comes later lets
			// it end, since an import run twice adds its decisions twice.
			return runJob(cmd.Context(), jo, "review import", func(j *job.Job) error {
				if err := j.Commit(); err != nil {
					return err
				}
				return importDecisions(j.Context(), cmd, lines, reviews, db)
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&sheets, "csv", nil, "filled sheet (repeat the flag or list more sheets as arguments)")
	f.StringVar(&src, "source", "", "manifest or candidates the sheets were made from (binds rows without digests)")
	f.StringVar(&reviews, "reviews", "", "reviews.jsonl to append to (created when absent; any other file is refused)")
	f.StringVar(&db, "review-db", "", "review database to import into")
	f.StringVar(&reviewer, "reviewer", "", "reviewer name (default: the sheet's annotator_<X> folder, else import)")
	f.BoolVar(&legacy, "legacy-nonempty-accept", false, "optimal? cells: any non-empty cell accepts (the reference's rule)")
	return cmd
}

// importDecisions appends the decisions read from the sheets to the review
// log reviews, or imports them into the review database db.
func importDecisions(ctx context.Context, cmd *cobra.Command, lines []*reviewlog.Line, reviews, db string) error {
	if reviews != "" {
		if err := review.AppendLog(reviews, lines); err != nil {
			return withExit(2, err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "appended %d decision(s) to %s\n", len(lines), reviews)
		return nil
	}
	st, err := review.Open(db)
	if err != nil {
		return withExit(2, err)
	}
	if err := st.ImportLines(ctx, lines); err != nil {
		_ = st.Close() // the import failed; that error is the one reported
		return withExit(2, err)
	}
	// Closing checkpoints the log into the database: a failure
	// there is a failed import.
	if err := st.Close(); err != nil {
		return withExit(2, fmt.Errorf("review db %s: %w", db, err))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "imported %d decision(s) into %s\n", len(lines), db)
	return nil
}

// checkListen checks --listen and warns when a non-loopback address is
// served without TLS.
func checkListen(cmd *cobra.Command, listen string, useTLS bool) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return withExit(2, fmt.Errorf("--listen %q: %w", listen, err))
	}
	if !isLoopbackHost(host) && !useTLS {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: listening on %s, which is not a loopback address, without TLS: tokens and session cookies travel in clear text unless a TLS proxy sits in front\n", listen)
	}
	return nil
}

// serveApp serves a web app (review, reading) on listen, over TLS when a
// certificate is given, printing its URL, until SIGINT or SIGTERM.
func serveApp(cmd *cobra.Command, h http.Handler, listen, certFile, keyFile string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := webapp.Server{Listen: listen, CertFile: certFile, KeyFile: keyFile, URL: cmd.OutOrStdout()}
	err := srv.Serve(ctx, h)
	if se, ok := errors.AsType[*webapp.SettingError](err); ok {
		return withExit(2, fmt.Errorf("%s: %w", se.Settings("--listen", "--tls-cert", "--tls-key"), se.Err))
	}
	return withExit(2, err)
}
