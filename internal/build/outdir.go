package build

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/source"
)

// The output directory belongs to the build that claimed it. The claim
// is the marker work/.chexpercept-build (outside SHA256SUMS, so the
// outputs do not change), written before anything else: it names the
// source and lists the key_ids whose bundle folders a build may have
// written that SHA256SUMS does not list yet. Together with the previous
// SHA256SUMS it is the record of every file a build wrote; a build refuses
// a directory holding anything else, and removes only recorded folders.
// A finished build without the marker (work/ deleted, or made before the
// marker existed) is recognised by build_info.json and SHA256SUMS.
const (
	markerName    = ".chexpercept-build"
	markerWriter  = "chexpercept build"
	markerLimit   = 64 << 20  // bytes read of the marker and build_info.json
	sumsLimit     = 512 << 20 // bytes read of SHA256SUMS
	markerRelPath = workDirName + "/" + markerName
)

// rootFiles and rootDirs are the entries a build writes at the top of
// the output directory (§11).
var (
	rootFiles = map[string]bool{benchmarkJSON: true, deformJSON: true, casesJSONL: true, reportJSON: true,
		skippedCSV: true, infoJSON: true, timingJSON: true, sumsFile: true, lesionsJSON: true}
	rootDirs = map[string]bool{imagesDir: true, masksDir: true, inspectDir: true, workDirName: true}
)

// inspectFiles are the files of an inspect/<key_id>/ folder; steps/ and
// fakes/ hold PNGs (§12).
var inspectFiles = map[string]bool{"summary.txt": true, "geometry.png": true, "regions.png": true,
	"overlaps.json": true, "deformation.json": true, "points.png": true, "revision_options.png": true}

// ownership is what the build may write over or remove in its output
// directory.
type ownership struct {
	fresh     bool            // absent or empty: nothing to protect
	legacy    bool            // a finished build recognised without the marker
	source    string          // recorded source path (real), "" when legacy
	sourceSHA string          // recorded source SHA-256
	pending   map[string]bool // key_ids with bundle folders not listed in SHA256SUMS
	listed    map[string]bool // paths listed in the previous SHA256SUMS, and "<dir>/<key>/" of their folders
	folders   map[string]bool // "<dir>/<name>" bundle folders verified as the build's
}

// isLeftover reports whether an entry name is debris of an interrupted
// write (§14), which the build removes.
func isLeftover(name string) bool {
	return strings.HasPrefix(name, ".staging-") || strings.Contains(name, ".tmp-")
}

// readOwnership decides, without changing anything, whether out may
// receive a build: new or empty, or a build's directory whose every entry
// the build wrote. Anything else is an *outdir.Refused error.
func readOwnership(out string) (*ownership, error) {
	st, names, err := outdir.Look(out, filepath.FromSlash(markerRelPath))
	if err != nil {
		return nil, err
	}
	o := &ownership{pending: map[string]bool{}, listed: map[string]bool{}, folders: map[string]bool{}}
	switch {
	case st == outdir.Absent || st == outdir.Empty || claimStarted(out, names):
		o.fresh = true
		return o, nil
	case st == outdir.Marked:
		if err := o.readMarker(out); err != nil {
			return nil, err
		}
	case outdir.IsRegular(filepath.Join(out, infoJSON)) && outdir.IsRegular(filepath.Join(out, sumsFile)):
		if err := o.readLegacy(out); err != nil {
			return nil, err
		}
	default:
		return nil, outdir.Foreign(out, names, "build", markerRelPath)
	}
	if outdir.IsRegular(filepath.Join(out, sumsFile)) {
		if err := o.readSums(out); err != nil {
			return nil, err
		}
	}
	if err := o.verify(out, names); err != nil {
		return nil, err
	}
	// Nothing below may lead a write outside or be replaced unseen.
	if err := outdir.CheckTree(out); err != nil {
		return nil, err
	}
	return o, nil
}

// claimStarted reports whether names are what a build killed while
// claiming the directory leaves: work/ with at most a marker temporary.
func claimStarted(out string, names []string) bool {
	if len(names) != 1 || names[0] != workDirName {
		return false
	}
	fi, err := os.Lstat(filepath.Join(out, workDirName))
	if err != nil || !fi.IsDir() {
		return false
	}
	ents, err := os.ReadDir(filepath.Join(out, workDirName))
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), markerName+".tmp-") {
			return false
		}
	}
	return true
}

// readLimited reads a file of the build directory: a regular file, not
// a link, never blocking on a FIFO, of at most limit bytes.
func readLimited(p string, limit int64) ([]byte, error) {
	data, err := safefile.ReadFile(p, limit, safefile.NoFollow)
	if err != nil {
		return nil, safefile.Reason(err)
	}
	return data, nil
}

func (o *ownership) readMarker(out string) error {
	p := filepath.Join(out, filepath.FromSlash(markerRelPath))
	bad := func(why string) error {
		return outdir.Refuse(out, markerRelPath, "output directory %s: build marker %s is unreadable (%s); delete the directory or choose another", out, markerRelPath, why)
	}
	data, err := readLimited(p, markerLimit)
	if err != nil {
		return bad(err.Error())
	}
	v, err := ojson.Parse(data)
	if err != nil || v.Kind != ojson.KindObject {
		return bad("not a JSON object")
	}
	str := func(k string) string {
		if x := v.Get(k); x != nil && x.Kind == ojson.KindString {
			return x.S
		}
		return ""
	}
	if str("written_by") != markerWriter {
		return bad("written_by is not " + markerWriter)
	}
	o.source, o.sourceSHA = str("source"), str("source_sha256")
	if x := v.Get("pending_keys"); x != nil && x.Kind == ojson.KindArray {
		for _, e := range x.A {
			if e.Kind == ojson.KindString && e.S != "" && !strings.ContainsAny(e.S, `/\`) {
				o.pending[e.S] = true
			}
		}
	}
	return nil
}

func (o *ownership) readLegacy(out string) error {
	data, err := readLimited(filepath.Join(out, infoJSON), markerLimit)
	var v *ojson.Value
	if err == nil {
		v, err = ojson.Parse(data)
	}
	if err != nil || v.Kind != ojson.KindObject || v.Get("source_sha256") == nil || v.Get("source_sha256").Kind != ojson.KindString {
		return outdir.Refuse(out, infoJSON, "output directory %s holds a %s that chexpercept build did not write, and no %s marker; choose a new or empty directory", out, infoJSON, markerRelPath)
	}
	o.legacy, o.sourceSHA = true, v.Get("source_sha256").S
	if f := v.Get("source_file"); f != nil && f.Kind == ojson.KindString {
		o.source = f.S
	}
	return nil
}

// readSums loads the paths listed in SHA256SUMS.
func (o *ownership) readSums(out string) error {
	data, err := readLimited(filepath.Join(out, sumsFile), sumsLimit)
	if err != nil {
		return outdir.Refuse(out, sumsFile, "output directory %s: %s: %v", out, sumsFile, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if _, rel, ok := strings.Cut(sc.Text(), "  "); ok && rel != "" {
			o.listed[rel] = true
			// The bundle folder of a listed file is listed too.
			if d, rest, ok := strings.Cut(rel, "/"); ok {
				if k, _, ok := strings.Cut(rest, "/"); ok {
					o.listed[d+"/"+k+"/"] = true
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return outdir.Refuse(out, sumsFile, "output directory %s: %s: %v", out, sumsFile, err)
	}
	return nil
}

// foreign is the error for an entry the build did not write.
func foreign(out, rel string) error {
	return outdir.Refuse(out, rel, "output directory %s holds %q, which chexpercept did not write; move it away or choose another directory", out, rel)
}

// verify checks every top-level entry, the bundle folders and the inspect
// folders of an owned directory.
func (o *ownership) verify(out string, names []string) error {
	for _, n := range names {
		if isLeftover(n) {
			continue
		}
		fi, err := os.Lstat(filepath.Join(out, n))
		if err != nil {
			return fmt.Errorf("output directory %s: %w", out, safefile.Reason(err))
		}
		if !(rootDirs[n] && fi.IsDir()) && !(rootFiles[n] && fi.Mode().IsRegular()) {
			return foreign(out, n)
		}
	}
	for _, d := range []string{imagesDir, masksDir} {
		if err := o.verifyBundle(out, d); err != nil {
			return err
		}
	}
	ents, err := os.ReadDir(filepath.Join(out, inspectDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("output directory %s: %w", out, safefile.Reason(err))
	}
	for _, e := range ents {
		if !isLeftover(e.Name()) {
			if err := checkInspectFolder(out, inspectDir+"/"+e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}

// verifyBundle checks chexpercept/ or masks/: a folder of a pending key
// is the build's as a whole; any other file must be listed in SHA256SUMS.
func (o *ownership) verifyBundle(out, d string) error {
	ents, err := os.ReadDir(filepath.Join(out, d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory %s: %w", out, safefile.Reason(err))
	}
	for _, e := range ents {
		n := e.Name()
		rel := d + "/" + n
		switch {
		case isLeftover(n):
			continue
		case !e.IsDir() || (!o.pending[n] && !o.listed[rel+"/"]):
			return foreign(out, rel)
		case o.pending[n]:
			o.folders[rel] = true
			continue
		}
		err := filepath.WalkDir(filepath.Join(out, d, n), func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			r, _ := filepath.Rel(out, p)
			r = filepath.ToSlash(r)
			if de.IsDir() || (de.Type().IsRegular() && o.listed[r]) {
				return nil
			}
			return foreign(out, r)
		})
		if err != nil {
			return err
		}
		o.folders[rel] = true
	}
	return nil
}

// checkInspectFolder accepts an inspect/<key_id>/ folder (rel to out) that
// is absent or holds nothing but what inspect writes.
func checkInspectFolder(out, rel string) error {
	// inspect/ itself must not be a link leading the folder elsewhere.
	root, err := outdir.Path(out, rel)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory %s: %w", out, safefile.Reason(err))
	}
	if !fi.IsDir() {
		return foreign(out, rel)
	}
	return filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		r = filepath.ToSlash(r)
		sub, name := path.Split(r)
		ok := false
		switch {
		case r == ".":
			ok = true
		case de.IsDir():
			ok = sub == "" && (name == "steps" || name == "fakes")
		case de.Type().IsRegular():
			ok = (sub == "" && inspectFiles[name]) || ((sub == "steps/" || sub == "fakes/") && strings.HasSuffix(name, ".png"))
		}
		if !ok {
			return foreign(out, rel+"/"+r)
		}
		return nil
	})
}

// checkSource refuses a directory claimed by a build of another source:
// the same real path or the same content is the same source.
func (o *ownership) checkSource(out, given, real, sha string) error {
	if o.fresh || real == o.source || sha == o.sourceSHA {
		return nil
	}
	was := o.source
	if o.legacy {
		was = fmt.Sprintf("a source file %s with SHA-256 %s", o.source, o.sourceSHA)
	}
	return outdir.Refuse(out, "", "output directory %s holds the build of %s, not of %s; choose another directory (or pass that source)", out, was, given)
}

// save writes the marker (creating work/).
func (o *ownership) save(j *job.Job, out string) error {
	if err := os.MkdirAll(filepath.Join(out, workDirName), 0o755); err != nil {
		return safefile.Reason(err)
	}
	keys := slices.Sorted(maps.Keys(o.pending))
	v := ojson.NewObject().
		Set("written_by", ojson.Str(markerWriter)).
		Set("note", ojson.Str("this directory belongs to chexpercept build; it removes only files a build recorded")).
		Set("source", ojson.Str(o.source)).
		Set("source_sha256", ojson.Str(o.sourceSHA)).
		Set("pending_keys", ojson.Strs(keys))
	return atomicfile.WriteFile(j, filepath.Join(out, filepath.FromSlash(markerRelPath)), ojson.Marshal(v))
}

// mayRemove reports whether the bundle folder d/name was recorded as the
// build's.
func (o *ownership) mayRemove(d, name string) bool {
	return o.pending[name] || o.folders[d+"/"+name]
}

// checkSourceTree refuses an output directory that lies inside a folder
// holding the source's images or masks, or (when it is not new) holds the
// source file or any file the source names. The folder of the source file
// itself may hold the output directory (candidates.jsonl beside BENCH_DIR).
func checkSourceTree(out, src string, cases []*source.Case, fresh bool) error {
	realOut, err := outdir.RealPath(out)
	if err != nil {
		return fmt.Errorf("output directory %s: %w", out, err)
	}
	dataDirs := map[string]string{} // folder → one file of it
	files := map[string]bool{src: true}
	addData := func(p string) {
		if p != "" {
			files[p] = true
			if _, ok := dataDirs[filepath.Dir(p)]; !ok {
				dataDirs[filepath.Dir(p)] = p
			}
		}
	}
	for _, c := range cases {
		addData(c.Image)
		for _, m := range c.LesionMasks {
			addData(m)
		}
		if c.LungMasks != nil {
			addData(c.LungMasks.Right)
			addData(c.LungMasks.Left)
		}
		addData(c.HeartMask)
		if c.ReportPath != "" {
			files[c.ReportPath] = true
		}
		if c.Chexmask != nil {
			files[c.Chexmask.CSV] = true
		}
	}
	// The output directory and its existing ancestors, by identity.
	var ancestors []os.FileInfo
	for p := realOut; ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil {
			ancestors = append(ancestors, fi)
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dataDirs)) {
		fi, err := os.Stat(d)
		if err != nil {
			continue // a missing image fails its case later
		}
		for _, a := range ancestors {
			if os.SameFile(fi, a) {
				return outdir.Refuse(out, "", "output directory %s lies inside %s, which holds the source's images or masks (e.g. %s); choose a directory outside the source data", out, d, dataDirs[d])
			}
		}
	}
	outFi, err := os.Stat(realOut)
	if fresh || err != nil {
		return nil // nothing lies inside a new or empty directory
	}
	in := &insideCheck{out: outFi, memo: map[string]bool{}}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		if in.inside(filepath.Dir(f)) {
			return outdir.Refuse(out, "", "output directory %s holds %s, a file of the source; choose a directory outside the source data", out, f)
		}
	}
	return nil
}

// insideCheck tells whether a folder is, or lies inside, the folder out,
// by identity and following links, with one lstat per distinct path (a
// manifest names up to hundreds of thousands of folders).
type insideCheck struct {
	out  os.FileInfo
	memo map[string]bool
}

func (c *insideCheck) inside(d string) bool {
	if v, ok := c.memo[d]; ok {
		return v
	}
	c.memo[d] = false // a link loop ends here
	v := false
	if fi, err := os.Lstat(d); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if r, err := filepath.EvalSymlinks(d); err == nil {
				v = c.inside(r)
			}
		case os.SameFile(fi, c.out):
			v = true
		case filepath.Dir(d) != d:
			v = c.inside(filepath.Dir(d))
		}
	}
	c.memo[d] = v
	return v
}
