// Package outdir holds the one rule of the commands that write a directory
// (build, report, merge, review pack, inspect, phantom, demo): a command
// writes only into a directory that does not exist, is empty, or carries
// the command's own marker, and otherwise says which entry stops it,
// before it writes anything. Each command adds what it owns beyond that
// (build: the files its previous build recorded).
package outdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// State is what an output directory holds.
type State int

const (
	Absent State = iota // the path does not exist
	Empty               // an empty directory
	Marked              // a directory holding one of the markers
	Other               // a directory holding entries but none of the markers
)

// Refused is the one-line error of a refused output directory.
type Refused struct {
	Dir   string // the directory as given
	Entry string // the entry at fault, relative to Dir ("" when Dir itself is)
	msg   string
}

func (e *Refused) Error() string { return e.msg }

// Refuse returns a Refused error; the message should name dir and entry.
func Refuse(dir, entry, format string, args ...any) *Refused {
	return &Refused{Dir: dir, Entry: entry, msg: fmt.Sprintf(format, args...)}
}

// Look reports what dir holds, without changing anything. A symbolic link
// to a directory is followed; a path that exists and is not a directory
// (or is a dangling link) is refused. markers are paths relative to dir;
// one counts when it is a regular file (not a link). For Marked and Other
// the entry names of dir are returned, sorted.
func Look(dir string, markers ...string) (State, []string, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return Absent, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("output directory %s: %w", dir, unwrapPath(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if fi, err = os.Stat(dir); err != nil {
			return 0, nil, Refuse(dir, "", "output directory %s is a symbolic link that does not lead to a directory (%v)", dir, unwrapPath(err))
		}
	}
	if !fi.IsDir() {
		return 0, nil, Refuse(dir, "", "output directory %s exists and is not a directory", dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return 0, nil, fmt.Errorf("output directory %s: %w", dir, unwrapPath(err))
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil && err != io.EOF {
		return 0, nil, fmt.Errorf("output directory %s: %w", dir, unwrapPath(err))
	}
	if len(names) == 0 {
		return Empty, nil, nil
	}
	sort.Strings(names)
	for _, m := range markers {
		if IsRegular(filepath.Join(dir, m)) {
			return Marked, names, nil
		}
	}
	return Other, names, nil
}

// Require accepts dir when it is absent, empty or marked, and refuses it
// with a Foreign error otherwise. who names the command ("report").
func Require(dir, who string, markers ...string) (State, error) {
	st, names, err := Look(dir, markers...)
	if err != nil {
		return st, err
	}
	if st == Other {
		return st, Foreign(dir, names, who, markers[0])
	}
	return st, nil
}

// Foreign is the error for a non-empty directory without the marker of
// who: it names the first entry and how many more there are.
func Foreign(dir string, names []string, who, marker string) *Refused {
	more := ""
	switch {
	case len(names) == 2:
		more = " (and 1 more entry)"
	case len(names) > 2:
		more = fmt.Sprintf(" (and %d more entries)", len(names)-1)
	}
	return Refuse(dir, names[0], "output directory %s is not empty and was not made by chexpercept %s: it holds %q%s and no %s marker; choose a new or empty directory",
		dir, who, names[0], more, marker)
}

// IsRegular reports whether p is a regular file (links are not followed).
func IsRegular(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// RealPath returns p made absolute with the symbolic links of its existing
// part resolved; the part that does not exist yet is appended as given.
func RealPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var tail []string
	for cur := abs; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{real}, tail...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		tail = append([]string{filepath.Base(cur)}, tail...)
		cur = parent
	}
}

// Within reports whether path equals dir or lies below it; both must be
// clean absolute paths (RealPath).
func Within(path, dir string) bool {
	if path == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(path, dir)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
