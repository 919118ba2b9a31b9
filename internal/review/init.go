package review

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/textsafe"
	"github.com/chexpercept/chexpercept/internal/webapp"
)

// InitOptions configures Init.
type InitOptions struct {
	Reviewers int    // N ≥ 1
	Overlap   int    // K, 1 ≤ K ≤ N: reviewers per case
	Seed      uint64 // assignment seed
	Workers   int    // digest workers; ≤ 0 means the number of CPUs
	Source    string // recorded in meta
	Warn      io.Writer
	// Flags make the database an item-health re-review round
	// (itemhealth.go): each case's flags are stored and shown.
	Flags []ItemFlag
	// Deliver is given the credentials once the database is whole under
	// its temporary name, before it is published: the tokens are out
	// before the database can be used, and when Deliver fails (the tokens
	// could not be printed) the database is abandoned, not published.
	// nil: the credentials are only returned.
	Deliver func([]Credential) error
	// Job is the command's job: the database being made is registered
	// on it, and publishing it is the job's commit point (nil: no job).
	Job *job.Job
}

// Credential is a sign-in token printed once by `review init`.
type Credential struct {
	Name  string // reviewer name, or AdminName
	Token string
}

// maxReportBytes bounds a report_path file read into the store.
const maxReportBytes = 64 << 10

// Init creates the review database at path for cases (in source order):
// it computes each case's review digests and canonical candidate mask,
// assigns every case to opt.Overlap of opt.Reviewers reviewers, and
// creates one token per reviewer plus the admin token. Cases whose image
// or mask cannot be read are skipped with a warning (they cannot be
// reviewed; a build would fail them too); stored is the number of cases
// the database holds. Tokens are stored only as SHA-256 hashes; the
// returned credentials, given to opt.Deliver before the database is
// published, are the only copy.
//
// Once opt.Job's context ends (checked at every case digest and between
// the steps) Init stops with its error and leaves nothing; the
// credentials are not delivered.
func Init(path string, cases []*source.Case, opt InitOptions) (creds []Credential, stored int, err error) {
	ctx := opt.Job.Context()
	if opt.Reviewers < 1 {
		return nil, 0, fmt.Errorf("reviewers must be at least 1, got %d", opt.Reviewers)
	}
	if opt.Overlap < 1 || opt.Overlap > opt.Reviewers {
		return nil, 0, fmt.Errorf("overlap must be between 1 and the number of reviewers (%d), got %d", opt.Reviewers, opt.Overlap)
	}
	if len(cases) == 0 {
		return nil, 0, errors.New("the source has no cases to review")
	}
	kept, kd, err := readableCases(ctx, cases, opt)
	if err != nil {
		return nil, 0, err
	}
	names := make([]string, opt.Reviewers)
	for i := range names {
		names[i] = "r" + strconv.Itoa(i+1)
	}
	assign := Assign(kept, opt.Reviewers, opt.Overlap, opt.Seed)

	s, c, err := create(opt.Job, path)
	if err != nil {
		return nil, 0, err
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if err := insertMeta(tx, opt, s.stamp()); err != nil {
			return err
		}
		ids, c, err := insertReviewers(tx, names)
		if err != nil {
			return err
		}
		creds = c
		if len(opt.Flags) > 0 {
			if err := insertFlags(tx, opt.Flags); err != nil {
				return err
			}
		}
		return insertCases(tx, kept, kd, assign, ids)
	})
	if err != nil {
		c.Abandon() // a refused init leaves nothing behind
		return nil, 0, fmt.Errorf("review db %s: %w", path, err)
	}
	if err := ctx.Err(); err != nil {
		c.Abandon()
		return nil, 0, err
	}
	if opt.Deliver != nil {
		if err := opt.Deliver(creds); err != nil {
			c.Abandon()
			return nil, 0, err
		}
	}
	// Publishing makes the review the command's output.
	if err := opt.Job.Commit(); err != nil {
		c.Abandon()
		return nil, 0, fmt.Errorf("review db %s: %w", path, err)
	}
	if err := c.Publish(); err != nil {
		return nil, 0, err
	}
	return creds, len(kept), nil
}

// readableCases computes the cases' digests and keeps the cases that
// could be read, warning about the others.
func readableCases(ctx context.Context, cases []*source.Case, opt InitOptions) ([]*source.Case, []caseDigest, error) {
	digests, err := caseDigests(ctx, cases, opt.Workers)
	if err != nil {
		return nil, nil, err
	}
	var kept []*source.Case
	var kd []caseDigest
	for i, d := range digests {
		if frame.IsTransient(d.err) {
			// Out of descriptors, an I/O error …: the file may be fine, and
			// skipping its case would change the review set.
			return nil, nil, fmt.Errorf("%s: %w", textsafe.OneLine(cases[i].KeyID()), d.err)
		}
		if d.err != nil {
			if opt.Warn != nil {
				fmt.Fprintf(opt.Warn, "warning: %s skipped: %s\n", textsafe.OneLine(cases[i].KeyID()), textsafe.OneLine(d.err.Error()))
			}
			continue
		}
		kept = append(kept, cases[i])
		kd = append(kd, d)
	}
	if len(kept) == 0 {
		return nil, nil, errors.New("no case of the source could be read (see the warnings)")
	}
	return kept, kd, nil
}

// insertMeta records the review's settings.
func insertMeta(tx *sql.Tx, opt InitOptions, created string) error {
	for k, v := range map[string]string{
		"schema": schemaID, "locked": "0", "overlap": strconv.Itoa(opt.Overlap),
		"reviewers": strconv.Itoa(opt.Reviewers), "seed": strconv.FormatUint(opt.Seed, 10),
		"source": opt.Source, "created": created,
	} {
		if _, err := tx.Exec(`INSERT INTO meta(key, value) VALUES(?, ?)`, k, v); err != nil {
			return err
		}
	}
	return nil
}

// insertReviewers creates the reviewers and the admin with fresh tokens;
// ids are the reviewers' row ids (without the admin's).
func insertReviewers(tx *sql.Tx, names []string) (ids []int64, creds []Credential, err error) {
	ids = make([]int64, len(names))
	creds = make([]Credential, 0, len(names)+1)
	for i, n := range append(names, AdminName) {
		tok, err := webapp.NewToken() // 256 bits: a plain SHA-256 of it is a safe verifier
		if err != nil {
			return nil, nil, err
		}
		res, err := tx.Exec(`INSERT INTO reviewers(name, token_sha256, is_admin) VALUES(?, ?, ?)`, n, tokenHash(tok), n == AdminName)
		if err != nil {
			return nil, nil, err
		}
		if i < len(ids) {
			ids[i], _ = res.LastInsertId()
		}
		creds = append(creds, Credential{Name: n, Token: tok})
	}
	return ids, creds, nil
}

// insertCases stores the kept cases (ids from 1, in order) and their
// assignments to the reviewers of ids.
func insertCases(tx *sql.Tx, kept []*source.Case, kd []caseDigest, assign [][]int, ids []int64) error {
	insCase, err := tx.Prepare(`INSERT INTO cases(id, key_id, case_id, lesion, label, image_path, image_id, image_sha256, mask_sha256, mask_png, report, location_hints, source_type)
			VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	insAssign, err := tx.Prepare(`INSERT INTO assignments(case_id, reviewer_id, pos) VALUES(?,?,?)`)
	if err != nil {
		return err
	}
	for i, c := range kept {
		id := int64(i + 1)
		var imageID, maskSHA, maskPNG any
		if c.ImageID != nil {
			imageID = *c.ImageID
		}
		if kd[i].mask != "" {
			maskSHA = kd[i].mask
		}
		if kd[i].maskPNG != nil {
			maskPNG = kd[i].maskPNG
		}
		if _, err := insCase.Exec(id, c.KeyID(), c.CaseID, c.Lesion, c.Label, c.Image, imageID, kd[i].image, maskSHA, maskPNG,
			kd[i].report, joinHints(cleanHints(c.LocationHints)), c.SourceType); err != nil {
			return fmt.Errorf("case %s: %w", c.KeyID(), err)
		}
		for pos, r := range assign[i] {
			if _, err := insAssign.Exec(id, ids[r], pos); err != nil {
				return err
			}
		}
	}
	return nil
}

// cleanHints drops empty hints and line breaks (the store joins hints by
// newline).
func cleanHints(h []string) []string {
	var out []string
	for _, x := range h {
		x = textsafe.Squash(x)
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

type caseDigest struct {
	image, mask string
	maskPNG     []byte
	report      string
	err         error
}

// caseDigests computes the review digests of every case in parallel
// (results by index, so the outcome does not depend on the worker count).
// Once ctx ends no further case is digested, and the error is ctx's.
func caseDigests(ctx context.Context, cases []*source.Case, workers int) ([]caseDigest, error) {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	loader, err := source.NewLoader(nil, nil, buildcfg.Default(), "", nil)
	if err != nil {
		return nil, err
	}
	out := make([]caseDigest, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = digestCase(loader, cases[i])
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
		return nil, err
	}
	return out, nil
}

func digestCase(l *source.Loader, c *source.Case) caseDigest {
	var d caseDigest
	// The header check sample and build apply: a file that is no PNG or
	// JPEG of an accepted size cannot be shown to a reviewer.
	if d.err = source.CheckImage(c.Image); d.err != nil {
		return d
	}
	if d.image, d.err = source.ImageSHA256(c); d.err != nil {
		return d
	}
	d.report, d.err = reportText(c)
	if d.err != nil {
		return d
	}
	if !c.Positive() {
		return d
	}
	m, err := l.CandidateMask(c)
	if err != nil {
		d.err = err
		return d
	}
	d.mask = source.MaskSHA256(m)
	var buf bytes.Buffer
	if err := mask.EncodePNG(&buf, m); err != nil {
		d.err = err
		return d
	}
	d.maskPNG = buf.Bytes()
	return d
}

// reportText is the case's report: the report field, else the first
// maxReportBytes of report_path (informational, §2.4).
func reportText(c *source.Case) (string, error) {
	if c.Report != "" || c.ReportPath == "" {
		return c.Report, nil
	}
	f, err := safefile.Open(c.ReportPath, safefile.Follow)
	if err != nil {
		return "", fmt.Errorf("report_path %s: %w", c.ReportPath, safefile.Reason(err))
	}
	defer func() { _ = f.Close() }() // read-only
	b, err := io.ReadAll(io.LimitReader(f, maxReportBytes))
	if err != nil {
		return "", fmt.Errorf("report_path %s: %w", c.ReportPath, err)
	}
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	return string(b), nil
}

// Assign gives every case k of the n reviewers (indices 0…n−1), balanced
// within each lesion: cases are taken lesion by lesion, positives then
// negatives, in source order; each goes to the k reviewers with the fewest
// cases of this lesion and label so far, then of this lesion, ties broken
// by a permutation drawn from the lesion's RNG
// (SHA-256("chexpercept/review/<seed>/<lesion>")). Each case's reviewers
// are returned in ascending index order (its assignment order). Within a
// lesion and label the counts of any two reviewers differ by at most one.
func Assign(cases []*source.Case, n, k int, seed uint64) [][]int {
	out := make([][]int, len(cases))
	byLesion := map[string][]int{}
	var order []string
	for i, c := range cases {
		if byLesion[c.Lesion] == nil {
			order = append(order, c.Lesion)
		}
		byLesion[c.Lesion] = append(byLesion[c.Lesion], i)
	}
	for _, les := range order {
		r := rng.New(fmt.Sprintf("chexpercept/review/%d/%s", seed, les))
		lesionLoad := make([]int, n)
		for _, label := range []string{"positive", "negative"} {
			labelLoad := make([]int, n)
			for _, i := range byLesion[les] {
				if cases[i].Label != label {
					continue
				}
				perm := make([]int, n)
				for j := range perm {
					perm[j] = j
				}
				rng.Shuffle(r, perm)
				sort.SliceStable(perm, func(a, b int) bool {
					pa, pb := perm[a], perm[b]
					if labelLoad[pa] != labelLoad[pb] {
						return labelLoad[pa] < labelLoad[pb]
					}
					return lesionLoad[pa] < lesionLoad[pb]
				})
				chosen := append([]int(nil), perm[:k]...)
				sort.Ints(chosen)
				for _, j := range chosen {
					labelLoad[j]++
					lesionLoad[j]++
				}
				out[i] = chosen
			}
		}
	}
	return out
}
