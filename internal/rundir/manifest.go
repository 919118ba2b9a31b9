package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// MaxManifestBytes bounds the manifest.json a reader accepts; a real one
// is a few kilobytes (the prompt texts are the largest part).
const MaxManifestBytes = 16 << 20

// ReadManifest reads dir/manifest.json (a regular file of at most
// MaxManifestBytes). Every error names the file; a missing file is an
// error that matches fs.ErrNotExist.
func ReadManifest(dir string) (*results.Manifest, error) {
	name := filepath.Join(dir, ManifestFile)
	data, err := safefile.ReadFile(name, MaxManifestBytes, safefile.Follow)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, noManifestError(dir)
		}
		return nil, err
	}
	m, err := results.ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid manifest: %w", name, err)
	}
	return m, nil
}

// noManifestError is a directory without manifest.json.
type noManifestError string

func (e noManifestError) Error() string {
	return string(e) + ": no " + ManifestFile + "; not a run directory or shard folder"
}

func (noManifestError) Unwrap() error { return fs.ErrNotExist }
