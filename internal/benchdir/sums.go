package benchdir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// SumsFileName is the builder's list of the SHA-256 of every file it
// wrote (build.md §11): `<64 hex>  <path>` lines, as sha256sum writes them.
const SumsFileName = "SHA256SUMS"

// MaxSumsBytes bounds the read of SHA256SUMS (a full build's is a few MB).
const MaxSumsBytes = 256 << 20

// ErrNoSums is returned by ReadSums for a benchmark without SHA256SUMS:
// its files cannot be checked against the build that wrote them.
var ErrNoSums = errors.New("no " + SumsFileName + ": the files cannot be checked against the build that wrote them")

// ErrChanged is wrapped by the error for a benchmark file whose bytes are
// not those SHA256SUMS lists (or that it does not list): the benchmark
// changed since it was built.
var ErrChanged = errors.New("changed since the benchmark was built")

// Sums is a benchmark's SHA256SUMS: the content hash of each file the
// build wrote, by path relative to the benchmark directory.
type Sums struct {
	Dir    string
	SHA256 string // of the SHA256SUMS file itself
	want   map[string]string
}

// ReadSums reads dir/SHA256SUMS. A benchmark without one gives an error
// wrapping ErrNoSums; a malformed line is refused with its line number.
func ReadSums(dir string) (*Sums, error) {
	name := filepath.Join(dir, SumsFileName)
	data, err := safefile.ReadFile(name, MaxSumsBytes, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, ErrNoSums)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, safefile.Reason(err))
	}
	s, err := ParseSums(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.Dir = dir
	return s, nil
}

// ReadIdentity is the identity of the benchmark in dir as its
// SHA256SUMS gives it: the SHA-256 of that file's bytes (read never
// through a link, at most MaxSumsBytes). A benchmark without one gives an
// error wrapping ErrNoSums; its identity is then that of chexpercept.json
// (benchmark.FromJSON's).
func ReadIdentity(dir string) (benchmark.Identity, error) {
	name := filepath.Join(dir, SumsFileName)
	data, err := safefile.ReadFile(name, MaxSumsBytes, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return benchmark.Identity{}, fmt.Errorf("%s: %w", dir, ErrNoSums)
	}
	if err != nil {
		return benchmark.Identity{}, fmt.Errorf("%s: %w", name, safefile.Reason(err))
	}
	return benchmark.Identity{File: SumsFileName, SHA256: benchmark.SHA256Hex(data)}, nil
}

// Identity is the benchmark identity these sums give: the SHA-256 of the
// SHA256SUMS file they were read from.
func (s *Sums) Identity() benchmark.Identity {
	return benchmark.Identity{File: SumsFileName, SHA256: s.SHA256}
}

// OpenSums reads b's SHA256SUMS, checks b's JSON files against it and
// sets b.Identity to the sums' (what every later check of a file is made
// against). A benchmark without SHA256SUMS gives nil Sums and an error
// wrapping ErrNoSums, and keeps the identity of its chexpercept.json: the
// caller warns that its images cannot be checked.
func OpenSums(b *benchmark.Benchmark) (*Sums, error) {
	sums, err := ReadSums(b.Dir)
	if errors.Is(err, ErrNoSums) {
		b.Identity = benchmark.Identity{File: benchmark.JSONName, SHA256: b.SHA256}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if err := sums.CheckJSON(b); err != nil {
		return nil, err
	}
	b.Identity = sums.Identity()
	return sums, nil
}

// CheckIdentity compares the identity of b (as loaded or opened) with
// want, the one a run or study recorded; what names the recorder ("the
// study", "the run"). The error says both and what to do.
func CheckIdentity(b *benchmark.Benchmark, want benchmark.Identity, what string) error {
	got := b.Identity
	if got == want {
		return nil
	}
	why := "it changed"
	switch {
	case want.File == SumsFileName && got.File != SumsFileName:
		why = SumsFileName + " is gone"
	case want.File == SumsFileName:
		why = SumsFileName + " changed"
	case got.File == SumsFileName:
		why = "it has a " + SumsFileName + " now"
	}
	return fmt.Errorf("%s: benchmark identity is %s, but %s was made on %s (%s): it is another benchmark now; restore the benchmark %s was made on, or start anew on this one",
		textsafe.OneLine(b.Dir), got.Short(), what, want.Short(), why, what)
}

// ParseSums parses SHA256SUMS bytes: each line `<64 lowercase hex>  <path>`.
func ParseSums(data []byte) (*Sums, error) {
	s := &Sums{SHA256: benchmark.SHA256Hex(data), want: map[string]string{}}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		h, rel, ok := strings.Cut(string(line), "  ")
		// sha256sum given ./-prefixed paths writes them so: the same
		// file as without the prefix.
		for strings.HasPrefix(rel, "./") {
			rel = rel[2:]
		}
		if !ok || len(h) != sha256.Size*2 || !isLowerHex(h) || rel == "" {
			return nil, fmt.Errorf("line %d: want `<64 lowercase hex digits>  <path>`", i+1)
		}
		if _, dup := s.want[rel]; dup {
			return nil, fmt.Errorf("line %d: %s is listed twice", i+1, textsafe.OneLine(rel))
		}
		s.want[rel] = h
	}
	return s, nil
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Len is the number of files listed.
func (s *Sums) Len() int { return len(s.want) }

// Check compares the content hash sha of the file at rel (relative to the
// benchmark directory, with /) with the one listed. The error names the
// file and wraps ErrChanged.
func (s *Sums) Check(rel, sha string) error {
	want, ok := s.want[rel]
	switch {
	case !ok:
		return &ChangedError{Dir: s.Dir, Rel: rel, Unlisted: true}
	case want != sha:
		return &ChangedError{Dir: s.Dir, Rel: rel}
	}
	return nil
}

// CheckFile hashes the regular file at rel (never through a link; at most
// imagefile.MaxFileBytes, or MaxJSONSize for a JSON file) and checks it.
func (s *Sums) CheckFile(rel string) error {
	name := filepath.Join(s.Dir, filepath.FromSlash(rel))
	f, err := safefile.Open(name, safefile.NoFollow)
	if err != nil {
		return fmt.Errorf("%s: %w", name, safefile.Reason(err))
	}
	defer func() { _ = f.Close() }() // read-only
	limit := int64(imagefile.MaxFileBytes)
	if strings.HasSuffix(rel, ".json") {
		limit = max(limit, MaxJSONSize)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case n > limit:
		return fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return s.Check(rel, hex.EncodeToString(h.Sum(nil)))
}

// CheckJSON checks the benchmark's JSON files: chexpercept.json, whose
// hash the loader already has (b.SHA256), and lesions.json when present.
func (s *Sums) CheckJSON(b *benchmark.Benchmark) error {
	if err := s.Check(benchmark.JSONName, b.SHA256); err != nil {
		return err
	}
	if _, listed := s.want[benchmark.LesionsFileName]; listed {
		return s.CheckFile(benchmark.LesionsFileName)
	}
	if err := safefile.CheckRegular(filepath.Join(s.Dir, benchmark.LesionsFileName)); err == nil {
		return s.Check(benchmark.LesionsFileName, "")
	}
	return nil
}

// ChangedError is a benchmark file that is not the one the build wrote.
type ChangedError struct {
	Dir, Rel string
	Unlisted bool // the file is not listed in SHA256SUMS at all
}

func (e *ChangedError) Error() string {
	name := textsafe.OneLine(filepath.Join(e.Dir, filepath.FromSlash(e.Rel)))
	if e.Unlisted {
		return fmt.Sprintf("%s: not listed in %s: the benchmark %s; restore it from its build (or rebuild it)", name, SumsFileName, ErrChanged)
	}
	return fmt.Sprintf("%s: its SHA-256 is not the one %s lists: the file %s; restore the benchmark from its build (or rebuild it)", name, SumsFileName, ErrChanged)
}

func (e *ChangedError) Unwrap() error { return ErrChanged }
