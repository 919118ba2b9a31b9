// Package benchdir reads and writes a benchmark directory (spec
// format.md §1): chexpercept.json, the lesion declaration beside it, the
// image bundle's files and the build's SHA256SUMS. The records, the
// vocabulary and the codec of chexpercept.json's bytes are package
// benchmark's, which does no file I/O; every read here is bounded and
// never follows a link the format does not allow, and every write is
// atomic (temp file + rename).
package benchdir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// MaxJSONSize bounds the size of chexpercept.json that Load and the
// validator accept. The released file is a few tens of MB; anything far
// larger is not a benchmark and would only exhaust memory.
const MaxJSONSize = 256 << 20

// ReadJSONFile reads dir/chexpercept.json, refusing symlinks, non-regular
// files and files larger than MaxJSONSize.
func ReadJSONFile(dir string) ([]byte, error) {
	name := filepath.Join(dir, benchmark.JSONName)
	fi, err := os.Lstat(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: missing", name)
		}
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: is a symbolic link; refusing to follow it", name)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	if fi.Size() > MaxJSONSize {
		return nil, fmt.Errorf("%s: %d bytes exceeds the %d-byte limit", name, fi.Size(), MaxJSONSize)
	}
	f, err := safefile.Open(name, safefile.NoFollow)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(f, MaxJSONSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > MaxJSONSize {
		return nil, fmt.Errorf("%s: exceeds the %d-byte limit", name, MaxJSONSize)
	}
	return data, nil
}

// Load reads dir/chexpercept.json and names the benchmark by its
// identity (SHA256SUMS when the directory has one: ReadIdentity). It rejects invalid JSON, duplicate
// member names at any depth, records of the wrong shape, wrong types and
// missing fields, with an error naming the file, the key_id, a JSON
// Pointer and the reason. Unknown fields are ignored (the validator warns
// about them). It does not look at images; run the validator for that.
func Load(dir string) (*benchmark.Benchmark, error) {
	lesions, err := ReadLesions(dir)
	if err != nil {
		return nil, err
	}
	data, err := ReadJSONFile(dir)
	if err != nil {
		return nil, err
	}
	b, err := benchmark.FromJSON(dir, data, lesions)
	if err != nil {
		return nil, err
	}
	id, err := ReadIdentity(dir)
	switch {
	case errors.Is(err, ErrNoSums):
	case err != nil:
		return nil, err
	default:
		b.Identity = id
	}
	return b, nil
}

// SHA256File returns the lowercase hex SHA-256 of a regular file's bytes
// (a FIFO or device is refused at once).
func SHA256File(name string) (string, error) {
	f, err := safefile.Open(name, safefile.Follow)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read-only
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WriteJSON writes records to dir/chexpercept.json atomically: a
// temporary file in dir is written, synced and renamed over the target,
// so readers see either the old or the new file, never a partial one.
// The temporary file is registered with j (atomicfile.WriteFile).
func WriteJSON(j *job.Job, dir string, records []*benchmark.Record) error {
	return atomicfile.WriteFile(j, filepath.Join(dir, benchmark.JSONName), benchmark.Marshal(records))
}

// ReadLesions returns the lesion set that the benchmark in dir declares,
// or the built-in seven when it declares none.
func ReadLesions(dir string) (*benchmark.LesionSet, error) {
	name := filepath.Join(dir, benchmark.LesionsFileName)
	f, err := safefile.Open(name, safefile.NoFollow)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return benchmark.DefaultLesions(), nil
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer func() { _ = f.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(f, benchmark.MaxLesionsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > benchmark.MaxLesionsBytes {
		return nil, fmt.Errorf("%s: exceeds the %d-byte limit", name, benchmark.MaxLesionsBytes)
	}
	return benchmark.ParseLesions(name, data)
}

// WriteLesions writes the declaration into dir when s is not the built-in
// set, and removes nothing: a default build writes no file.
func WriteLesions(j *job.Job, dir string, s *benchmark.LesionSet) error {
	if s.IsDefault() {
		return nil
	}
	data, err := benchmark.MarshalLesions(s)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(j, filepath.Join(dir, benchmark.LesionsFileName), data)
}
