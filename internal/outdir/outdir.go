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
	"slices"
	"sort"
	"strings"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/safefile"
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
// one counts when it is a regular file (not a link). A directory holding
// nothing but temporary files of a marker's atomic write (the debris of a
// kill while a marker was renamed into place) counts as Empty: the command
// that claims it writes its marker and removes them (RemoveStale). For
// Marked and Other the entry names of dir are returned, sorted.
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
	_ = f.Close() // read-only
	if err != nil && err != io.EOF {
		return 0, nil, fmt.Errorf("output directory %s: %w", dir, unwrapPath(err))
	}
	if len(names) == 0 || onlyMarkerTemps(dir, names, markers) {
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

// Path returns dir/rel, the name of a file a command is about to write
// below its output directory dir, after checking what already exists on
// the way: every directory between dir and the file must be a real
// directory, not a symbolic link (a link planted there would lead the
// write outside dir), and the file itself, when it exists, a regular file
// (a link, FIFO or directory in its place is not ours to replace). dir
// itself may be a link: the user named it. A missing part is fine; the
// caller creates it. The error is a *Refused naming the entry.
func Path(dir, rel string) (string, error) {
	rel = filepath.Clean(filepath.FromSlash(rel))
	if rel == "." || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("output directory %s: %q is not a path inside it", dir, rel)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	cur := dir
	for i, p := range parts {
		cur = filepath.Join(cur, p)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("output directory %s: %w", dir, err)
		}
		entry := filepath.Join(parts[:i+1]...)
		last := i == len(parts)-1
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return "", Refuse(dir, entry, "output directory %s: %s is a symbolic link, which chexpercept does not write through or replace; remove it or choose another directory", dir, entry)
		case !last && !fi.IsDir():
			return "", Refuse(dir, entry, "output directory %s: %s is not a directory; remove it or choose another directory", dir, entry)
		case last && !fi.Mode().IsRegular() && !fi.IsDir():
			return "", Refuse(dir, entry, "output directory %s: %s is not a regular file (%s); remove it or choose another directory", dir, entry, safefile.KindOf(fi.Mode()))
		}
	}
	return filepath.Join(dir, rel), nil
}

// FilePath is Path for a file: an existing directory in the file's place
// is refused too.
func FilePath(dir, rel string) (string, error) {
	p, err := Path(dir, rel)
	if err != nil {
		return "", err
	}
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		return "", Refuse(dir, rel, "output directory %s: %s is a directory where chexpercept writes a file; remove it or choose another directory", dir, rel)
	}
	return p, nil
}

// MkdirAll creates dir/rel and the directories on the way (dir included),
// refusing a symbolic link or a file met below dir (see Path).
func MkdirAll(dir, rel string) (string, error) {
	p := dir
	if rel != "" && rel != "." {
		var err error
		if p, err = Path(dir, rel); err != nil {
			return "", err
		}
		if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
			return "", Refuse(dir, rel, "output directory %s: %s is not a directory; remove it or choose another directory", dir, rel)
		}
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", fmt.Errorf("output directory %s: %w", dir, err)
	}
	return p, nil
}

// WriteFile writes data to dir/rel atomically (atomic against readers and
// kills, not synced), creating the directories on the way; what Path
// refuses is refused before anything is written. The temporary file is
// registered with j (atomicfile.WriteFile).
func WriteFile(j *job.Job, dir, rel string, data []byte) error {
	if _, err := MkdirAll(dir, filepath.Dir(filepath.FromSlash(rel))); err != nil {
		return err
	}
	p, err := FilePath(dir, rel)
	if err != nil {
		return err
	}
	return atomicfile.WriteFileNoSync(j, p, data)
}

// Create starts the atomic write of dir/rel (see WriteFile), for an
// output written as a stream: Commit renames it into place.
func Create(j *job.Job, dir, rel string) (*atomicfile.File, error) {
	if _, err := MkdirAll(dir, filepath.Dir(filepath.FromSlash(rel))); err != nil {
		return nil, err
	}
	p, err := FilePath(dir, rel)
	if err != nil {
		return nil, err
	}
	return atomicfile.Create(j, p)
}

// SameFile reports whether the output path out names one of the inputs
// and returns that input. Paths are compared by identity, not spelling:
// the cleaned absolute path with the links of its existing part resolved
// (RealPath), and the device and inode when both exist (a hard link).
// Commands refuse such an output before writing; for an input that is a
// SQLite database they name its side files too (appdb.SideFiles), since
// writing over one of them is writing over the database.
func SameFile(out string, inputs ...string) (string, bool) {
	realOut, err := RealPath(out)
	if err != nil {
		realOut = filepath.Clean(out)
	}
	outFi, outErr := os.Stat(out)
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if realIn, err := RealPath(in); err == nil && realIn == realOut {
			return in, true
		}
		if outErr == nil {
			if fi, err := os.Stat(in); err == nil && os.SameFile(fi, outFi) {
				return in, true
			}
		}
	}
	return "", false
}

// CheckTree refuses an output directory that a command is about to write
// again (one carrying its marker) when anything below it is a symbolic
// link or neither a regular file nor a directory: a link planted in an
// earlier output would lead a later write outside it, and a FIFO or
// device is not a file the command wrote. It looks before anything is
// written, so a refused directory is left exactly as it was; links are
// not followed. skip names top-level entries not to walk (another
// command's part of the directory, such as the shard folders of a run).
func CheckTree(dir string, skip ...string) error {
	root := dir
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// The user named a link to the directory: walk what it leads to.
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			root = real
		}
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && slices.Contains(skip, rel) {
			return filepath.SkipDir
		}
		m := d.Type()
		switch {
		case m&fs.ModeSymlink != 0:
			return Refuse(dir, rel, "output directory %s: %s is a symbolic link, which chexpercept does not write through or replace; remove it or choose another directory", dir, rel)
		case m.IsDir() || m.IsRegular():
			return nil
		}
		return Refuse(dir, rel, "output directory %s: %s is not a regular file (%s); remove it or choose another directory", dir, rel, safefile.KindOf(m))
	})
}

// WriteMarker writes a command's marker file, whose presence (not its
// content) makes a directory the command's own. It is written in place,
// not through a temporary file, and first, before any output: a process
// stopped while writing it leaves the marker's name, so the rerun
// recognises its own unfinished directory, where a leftover temporary
// file would make the directory look foreign. Never through a link.
func WriteMarker(name string, data []byte) error {
	f, err := safefile.OpenWritable(name, os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, unwrapPath(err))
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = atomicfile.SyncDir(filepath.Dir(name))
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// onlyMarkerTemps reports whether every entry of dir is a regular file
// named "<marker>.tmp-<digits>" for one of the top-level markers.
func onlyMarkerTemps(dir string, names, markers []string) bool {
	for _, n := range names {
		target, ok := atomicfile.TempTarget(n)
		if !ok || !slices.Contains(markers, target) || !IsRegular(filepath.Join(dir, n)) {
			return false
		}
	}
	return true
}

// RemoveStale removes, below the output directory dir that a command has
// claimed (new, empty or carrying its marker), the temporary files that
// atomic writes of an earlier run of the command left when it was killed:
// those of the files owns accepts (paths relative to dir, with forward
// slashes) and of the markers (see atomicfile.RemoveStale).
func RemoveStale(dir string, owns func(rel string) bool, markers ...string) error {
	err := atomicfile.RemoveStale(dir, func(rel string) bool {
		return slices.Contains(markers, rel) || owns(rel)
	})
	if err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	return nil
}
