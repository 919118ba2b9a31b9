// Package validate checks a benchmark directory against every rule of
// format.md §8 and reports findings, each with a code, a severity, the
// record's key_id and a location (a JSON Pointer into chexpercept.json or
// a path relative to the benchmark directory).
//
// The JSON checks walk the generic ojson tree rather than the typed model,
// so one run reports every type mismatch and duplicate member instead of
// stopping at the first. File-system checks never follow a symbolic link
// and never open a path built from JSON before it has passed the
// path-safety rules; images are checked by their PNG header (signature and
// IHDR) unless Options.Deep asks for a full decode. Findings come out in a
// fixed order (JSON checks in file order, then files record by record,
// then orphans, then a builder's deformation_results.json when the root
// holds one), whatever the number of workers.
package validate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// Severity of a finding.
type Severity string

const (
	Error   Severity = "E"
	Warning Severity = "W"
	Info    Severity = "I"
)

// Finding is one reported problem.
type Finding struct {
	Severity Severity
	Code     string
	KeyID    string // "" when the finding concerns no single record
	Location string // JSON Pointer, or a path relative to the benchmark dir
	Message  string

	// transient is the cause of a finding that only says a file could
	// not be read for a passing reason (safefile.Transient): Run fails
	// with it instead of reporting the benchmark as invalid.
	transient error
}

// String formats the finding as
// "<SEVERITY> <code> <key_id or -> <location> <message>".
func (f Finding) String() string {
	k := f.KeyID
	if k == "" {
		k = "-"
	}
	loc := f.Location
	if loc == "" {
		loc = "-"
	}
	return textsafe.OneLine(fmt.Sprintf("%s %s %s %s %s", f.Severity, f.Code, k, loc, f.Message))
}

// Options select what Run checks.
type Options struct {
	Deep       bool // decode every image fully
	Strict     bool // warnings count as errors
	SkipImages bool // skip the file-system checks of §8.4 and all of §8.5
	ExpectFull bool // a composition other than 100/100/100 per lesion is a warning
	Workers    int  // parallel file checks; 0 means GOMAXPROCS
	// Decoded, when set with Deep, is called with the SHA-256 (lower-case
	// hex) of the bytes of every image file that imagefile.DecodePNG
	// decoded, from the goroutines that check files, concurrently: the
	// demo hands these to its evaluations (eval.Options.Verified) so
	// that no image is decoded twice.
	Decoded func(sha256 string)

	sums *benchdir.Sums // deep: the build's SHA256SUMS, when the root holds one
}

// Report is the outcome of a validation run.
type Report struct {
	Dir      string
	Findings []Finding
	SHA256   string // of chexpercept.json; "" when it could not be read

	// Lesions is the benchmark's lesion set: its declaration
	// (lesions.json), or the built-in seven.
	Lesions *benchmark.LesionSet
	// Counts[lesion][path] counts records with a usable key, by path.
	Counts    map[string]map[benchmark.Path]int
	Records   int
	Questions int // one per asked question; equals the expected model calls
	Images    int // images the records require

	Errors, Warnings, Infos int
}

// OK reports whether there is no error.
func (r *Report) OK() bool { return r.Errors == 0 }

// ExitCode is 0 without errors and 1 with at least one.
func (r *Report) ExitCode() int {
	if r.Errors > 0 {
		return 1
	}
	return 0
}

// Has reports whether any finding has the given code.
func (r *Report) Has(code string) bool {
	for _, f := range r.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}

// Run validates the benchmark in dir. The error is non-nil only when the
// validation could not run at all (dir missing or unreadable, or a file
// that could not be read for a passing reason: too many open files, an
// I/O error, no memory); problems in the benchmark are findings. Once
// ctx ends (checked at every record folder and between the checks) Run
// stops with ctx's error: no verdict.
func Run(ctx context.Context, dir string, opt Options) (*Report, error) {
	root, err := filepath.EvalSymlinks(dir) // the root itself may be a link
	if err != nil {
		return nil, fmt.Errorf("benchmark directory %s: %w", dir, err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("benchmark directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("benchmark directory %s: not a directory", dir)
	}
	if _, err := os.ReadDir(root); err != nil {
		return nil, fmt.Errorf("benchmark directory %s: %w", dir, err)
	}
	rep := &Report{Dir: dir, Counts: map[string]map[benchmark.Path]int{}}
	var top sink
	lesions, err := benchdir.ReadLesions(root)
	if err != nil {
		top.add(Error, "invalid_lesions", "", benchmark.LesionsFileName, "%v", err)
		lesions = benchmark.DefaultLesions()
	}
	rep.Lesions = lesions
	for _, l := range lesions.Names() {
		rep.Counts[l] = map[benchmark.Path]int{}
	}
	recs := checkJSON(root, &top, rep)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opt.Deep {
		opt.sums = checkSums(root, rep, &top)
	}
	rep.Findings = append(rep.Findings, top.f...)
	for _, r := range recs {
		rep.Findings = append(rep.Findings, r.json.f...)
	}
	if !opt.SkipImages && len(recs) > 0 {
		rep.Findings = append(rep.Findings, checkFiles(ctx, root, recs, opt)...)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep.Findings = append(rep.Findings, checkDeformation(root, opt)...)
	for _, f := range rep.Findings {
		if f.transient != nil {
			// Too many open files, an I/O error …: no verdict on the
			// benchmark, which a rerun may well find valid.
			return nil, fmt.Errorf("benchmark %s: cannot read %s: %w", dir, f.Location, f.transient)
		}
	}
	summarise(rep, recs, opt)
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if opt.Strict && f.Severity == Warning {
			f.Severity = Error
		}
		switch f.Severity {
		case Error:
			rep.Errors++
		case Warning:
			rep.Warnings++
		default:
			rep.Infos++
		}
	}
	return rep, nil
}

// checkSums reads the builder's SHA256SUMS (deep mode) and checks the
// JSON files against it; the images are checked as they are decoded. A
// benchmark without one is noted (no_checksums); nil is returned then.
func checkSums(root string, rep *Report, s *sink) *benchdir.Sums {
	sums, err := benchdir.ReadSums(root)
	switch {
	case errors.Is(err, benchdir.ErrNoSums):
		s.add(Info, "no_checksums", "", benchdir.SumsFileName, "absent: the files cannot be checked against the build that wrote them")
		return nil
	case err != nil:
		s.add(Error, "file_changed", "", benchdir.SumsFileName, "unreadable, so no file can be checked against the build: %v", safefile.Reason(err))
		return nil
	}
	if rep.SHA256 != "" {
		sumsFinding(sums.Check(benchmark.JSONName, rep.SHA256), "", benchmark.JSONName, s)
	}
	name := filepath.Join(root, benchmark.LesionsFileName)
	if safefile.CheckRegular(name) == nil {
		sumsFinding(sums.CheckFile(benchmark.LesionsFileName), "", benchmark.LesionsFileName, s)
	}
	return sums
}

// sumsFinding reports err, the outcome of a check against SHA256SUMS.
func sumsFinding(err error, key, loc string, s *sink) {
	var ce *benchdir.ChangedError
	switch {
	case err == nil:
	case errors.As(err, &ce) && ce.Unlisted:
		s.add(Error, "file_changed", key, loc, "not listed in %s: the benchmark changed since it was built", benchdir.SumsFileName)
	case errors.As(err, &ce):
		s.add(Error, "file_changed", key, loc, "SHA-256 differs from the one in %s: the file changed since the benchmark was built", benchdir.SumsFileName)
	default:
		s.add(Error, "file_changed", key, loc, "cannot be checked against %s: %v", benchdir.SumsFileName, safefile.Reason(err))
	}
}

func workers(opt Options) int {
	if opt.Workers > 0 {
		return opt.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// summarise fills the counts and adds the composition line (§8.6).
func summarise(rep *Report, recs []*recInfo, opt Options) {
	for _, r := range recs {
		if !r.counted {
			continue
		}
		rep.Records++
		rep.Counts[r.lesion][r.path]++
		rep.Questions += benchmark.QuestionsFor(r.path, r.heart)
		rep.Images += benchmark.ImagesFor(r.path, len(r.options))
	}
	if rep.Records == 0 {
		return
	}
	var off []string
	for _, l := range rep.Lesions.Names() {
		c := rep.Counts[l]
		if c[benchmark.LesionFree] != 100 || c[benchmark.RevisionFree] != 100 || c[benchmark.RevisionRequired] != 100 {
			off = append(off, fmt.Sprintf("%s %d/%d/%d", l, c[benchmark.LesionFree], c[benchmark.RevisionFree], c[benchmark.RevisionRequired]))
		}
	}
	if len(off) > 0 {
		sev := Info
		if opt.ExpectFull {
			sev = Warning
		}
		rep.Findings = append(rep.Findings, Finding{Severity: sev, Code: "composition", Location: benchmark.JSONName, Message: "records per lesion LF/RF/RR differ from the released 100/100/100: " + strings.Join(off, ", ")})
	}
}

// WriteText writes one line per finding, then the summary.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, f := range r.Findings {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	r.writeSummary(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSummary writes only the summary block.
func (r *Report) WriteSummary(w io.Writer) error {
	var b strings.Builder
	r.writeSummary(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) writeSummary(b *strings.Builder) {
	fmt.Fprintf(b, "\nbenchmark: %s\n", r.Dir)
	fmt.Fprintf(b, "%-14s %6s %6s %6s %6s\n", "lesion", "LF", "RF", "RR", "total")
	var tot [3]int
	for _, l := range slices.Sorted(slices.Values(r.Lesions.Names())) {
		c := r.Counts[l]
		lf, rf, rr := c[benchmark.LesionFree], c[benchmark.RevisionFree], c[benchmark.RevisionRequired]
		tot[0] += lf
		tot[1] += rf
		tot[2] += rr
		fmt.Fprintf(b, "%-14s %6d %6d %6d %6d\n", l, lf, rf, rr, lf+rf+rr)
	}
	fmt.Fprintf(b, "%-14s %6d %6d %6d %6d\n", "total", tot[0], tot[1], tot[2], r.Records)
	fmt.Fprintf(b, "questions: %d (LF 1, RF 6, RR 9; heart-type RF 2, RR 5)\n", r.Questions)
	fmt.Fprintf(b, "expected model calls: %d\n", r.Questions)
	fmt.Fprintf(b, "images required: %d\n", r.Images)
	sum := r.SHA256
	if sum == "" {
		sum = "unavailable"
	}
	fmt.Fprintf(b, "sha256(chexpercept.json): %s\n", sum)
	status := "PASS"
	if r.Errors > 0 {
		status = "FAIL"
	}
	fmt.Fprintf(b, "result: %s, %d errors, %d warnings, %d information\n", status, r.Errors, r.Warnings, r.Infos)
}

// WriteJSONLines writes one JSON object per finding with the fields
// severity, code, key_id (null when there is none), location, message.
func (r *Report) WriteJSONLines(w io.Writer) error {
	var b strings.Builder
	for _, f := range r.Findings {
		o := ojson.NewObject()
		o.Set("severity", ojson.Str(string(f.Severity)))
		o.Set("code", ojson.Str(f.Code))
		if f.KeyID == "" {
			o.Set("key_id", ojson.Null())
		} else {
			o.Set("key_id", ojson.Str(f.KeyID))
		}
		o.Set("location", ojson.Str(f.Location))
		o.Set("message", ojson.Str(f.Message))
		b.Write(ojson.MarshalCompact(o))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ErrInvalid is matched (errors.Is) by Check's error for a benchmark with
// errors.
var ErrInvalid = errors.New("fails validation")

// Check runs the default validation; when the benchmark has errors it
// returns the report and an error matching ErrInvalid that names the
// directory, the error count and the first error. The evaluator refuses
// such a benchmark with it. ctx is Run's.
func Check(ctx context.Context, dir string) (*Report, error) {
	rep, err := Run(ctx, dir, Options{})
	if err != nil {
		return nil, err
	}
	if rep.OK() {
		return rep, nil
	}
	first := ""
	for _, f := range rep.Findings {
		if f.Severity == Error {
			first = f.String()
			break
		}
	}
	return rep, fmt.Errorf("benchmark %s %w with %d error(s), first: %s", dir, ErrInvalid, rep.Errors, first)
}

// AllCodes lists every finding code of format.md §8, then those of the
// builder side-file check.
var AllCodes = []string{
	"missing_file", "invalid_json", "not_object", "duplicate_key", "empty_benchmark",
	"unknown_lesion", "bad_key_id", "pair_id_mismatch", "polarity_mismatch", "bad_dicom_id", "duplicate_dicom",
	"missing_field", "type_mismatch", "unknown_field", "unexpected_field", heartAttributesCode,
	"attribute_key_absent", "attribute_keys", "bad_options", "options_differ", "unknown_colour", "colour_order",
	"point_out_of_bounds", "duplicate_point", "answer_index_out_of_range", "multiselect_invalid",
	"answer_inconsistent", "revision_true_option", "rr_without_revision", "few_revision_options",
	"attribute_gt_inconsistent", "mask_name_unrecognised",
	"unsafe_path", "bad_option_path", "symlink", "not_regular_file", "missing_folder", "missing_image",
	"option_image_mismatch", "unexpected_file", "orphan_folder",
	"image_decode", "image_size", "image_mode", "identical_option_images",
	"composition",
	// --deep against a builder's SHA256SUMS (build.md §11), when present.
	"file_changed", "no_checksums",
	// A builder's deformation_results.json, when present (build.md §11).
	"deformation_results_invalid", "deformation_mask_path",
}
