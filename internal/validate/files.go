package validate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// leftover reports names left by an interrupted write.
func leftover(name string) bool {
	return strings.HasPrefix(name, ".staging-") || strings.Contains(name, ".tmp-")
}

// checkFiles runs §8.4 (file part) and §8.5 over the record folders.
// Once ctx ends no further folder is checked (the caller gives no
// verdict then).
func checkFiles(ctx context.Context, root string, recs []*recInfo, opt Options) []Finding {
	var top sink
	imgDir := filepath.Join(root, benchmark.ImagesDir)
	fi, err := os.Lstat(imgDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		top.add(Error, "missing_file", "", benchmark.ImagesDir+"/", "the chexpercept/ image directory is absent")
		return top.f
	case err != nil:
		top.add(Error, "missing_file", "", benchmark.ImagesDir+"/", "cannot stat chexpercept/: %v", err)
		return top.f
	case fi.Mode()&os.ModeSymlink != 0:
		top.add(Error, "symlink", "", benchmark.ImagesDir+"/", "chexpercept/ is a symbolic link; it is not followed")
		return top.f
	case !fi.IsDir():
		top.add(Error, "missing_file", "", benchmark.ImagesDir+"/", "chexpercept/ is not a directory")
		return top.f
	}
	ents, err := os.ReadDir(imgDir)
	if err != nil {
		top.add(Error, "missing_file", "", benchmark.ImagesDir+"/", "cannot list chexpercept/: %v", err)
		return top.f
	}
	byName := make(map[string]fs.DirEntry, len(ents))
	for _, e := range ents {
		byName[e.Name()] = e
	}

	// Record folders in parallel; findings stay in record order.
	results := make([]sink, len(recs))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers(opt) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				checkRecordFiles(imgDir, recs[i], byName, opt, &results[i])
			}
		}()
	}
	claimed := make(map[string]bool, len(recs))
	for i, r := range recs {
		if !r.counted {
			continue
		}
		claimed[r.key] = true
		if r.skipFiles || ctx.Err() != nil {
			continue
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	for _, s := range results {
		top.f = append(top.f, s.f...)
	}

	var names []string
	for n := range byName {
		if !claimed[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		e := byName[n]
		loc := benchmark.ImagesDir + "/" + n
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			top.add(Error, "symlink", "", loc, "symbolic link inside chexpercept/; it is not followed")
		case leftover(n):
			top.add(Warning, "unexpected_file", "", loc, "leftover of an interrupted write")
		case e.IsDir():
			top.add(Warning, "orphan_folder", "", loc, "folder has no record in chexpercept.json")
		default:
			top.add(Warning, "unexpected_file", "", loc, "stray entry in chexpercept/")
		}
	}
	return top.f
}

// imageKind says which colour models an image may have.
type imageKind int

const (
	rgbImage    imageKind = iota // 8-bit RGB
	pointsImage                  // 8-bit RGB or RGBA
)

// checkRecordFiles checks one record folder.
func checkRecordFiles(imgDir string, r *recInfo, byName map[string]fs.DirEntry, opt Options, s *sink) {
	key := r.key
	base := benchmark.RecordDir(key)
	e, ok := byName[key]
	switch {
	case !ok:
		s.add(Error, "missing_folder", key, base+"/", "record folder is absent")
		return
	case e.Type()&fs.ModeSymlink != 0:
		s.add(Error, "symlink", key, base, "record folder is a symbolic link; it is not followed")
		return
	case !e.IsDir():
		s.add(Error, "missing_folder", key, base, "record folder is not a directory")
		return
	}

	w := newRecordWalk(imgDir, r, opt, s)
	w.walk("")

	var missing []string
	for p := range w.want {
		if !w.found[p] && !underBlocked(p, w.blocked) {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	for _, p := range missing {
		s.add(Error, "missing_image", key, base+"/"+p, "required image is absent")
	}

	if r.path == benchmark.RevisionRequired && !r.contourUnknown && !underBlocked(benchmark.RevisionDir+"/x", w.blocked) {
		checkOptionFiles(r, w.optFiles, base+"/"+benchmark.RevisionDir, s)
		checkIdenticalOptions(r, w.digests, base+"/"+benchmark.RevisionDir, s)
	}
}

// recordWalk walks one record folder against the files its record
// expects.
type recordWalk struct {
	imgDir, base string
	r            *recInfo
	opt          Options
	s            *sink

	want    map[string]imageKind // expected files (relative to the record folder) and their kinds
	wantDir map[string]bool      // the directories holding them
	optDir  string               // the revision options' directory, "" when none is expected

	found    map[string]bool
	blocked  map[string]bool // expected dirs that are links or not dirs
	optFiles []string
	digests  map[string]*imageDigest // option file name → digest (deep only)
}

func newRecordWalk(imgDir string, r *recInfo, opt Options, s *sink) *recordWalk {
	w := &recordWalk{
		imgDir: imgDir, base: benchmark.ImagesDir + "/" + r.key, r: r, opt: opt, s: s,
		want:    map[string]imageKind{benchmark.XrayRel: rgbImage},
		wantDir: map[string]bool{},
		found:   map[string]bool{},
		blocked: map[string]bool{},
		digests: map[string]*imageDigest{},
	}
	if r.path != benchmark.LesionFree && r.ceRel != "" {
		w.want[r.ceRel] = rgbImage
	}
	if r.path == benchmark.RevisionRequired && !r.contourUnknown {
		w.want[benchmark.PointsRel] = pointsImage
		w.optDir = benchmark.RevisionDir
		for _, o := range r.options {
			if o.file != "" {
				w.want[w.optDir+"/"+o.file] = rgbImage
			}
		}
	}
	for p := range w.want {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			w.wantDir[d] = true
		}
	}
	if r.path == benchmark.RevisionRequired && !r.contourUnknown {
		w.wantDir[benchmark.RevisionDir] = true
	}
	return w
}

// walk checks the entries of directory rel ("" = the record folder).
func (w *recordWalk) walk(rel string) {
	key := w.r.key
	dir := filepath.Join(w.imgDir, key, filepath.FromSlash(rel))
	ents, err := os.ReadDir(dir)
	if err != nil {
		w.s.add(Error, "not_regular_file", key, w.base+"/"+rel, "cannot list directory: %v", err)
		w.blocked[rel] = true
		return
	}
	for _, e := range ents {
		name := e.Name()
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		loc := w.base + "/" + p
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			w.s.add(Error, "symlink", key, loc, "symbolic link; it is not followed")
			w.blocked[p] = true
			w.found[p] = true
		case leftover(name):
			w.s.add(Warning, "unexpected_file", key, loc, "leftover of an interrupted write")
		case w.r.contourUnknown && p == benchmark.ContourDir:
			// contour_qa could not be read, so nothing is known about
			// what this folder should hold.
		case e.IsDir():
			w.dir(p, loc)
		default:
			w.file(rel, dir, e, p, loc)
		}
	}
}

// dir handles a subdirectory at p.
func (w *recordWalk) dir(p, loc string) {
	switch _, isFile := w.want[p]; {
	case w.wantDir[p]:
		w.walk(p)
	case isFile:
		w.s.add(Error, "not_regular_file", w.r.key, loc, "expected an image file, found a directory")
		w.found[p] = true
	default:
		w.s.add(Warning, "unexpected_file", w.r.key, loc, "unexpected folder for a %s record", w.r.path)
	}
}

// file handles a non-directory entry e of directory rel (dir on disk) at p.
func (w *recordWalk) file(rel, dir string, e fs.DirEntry, p, loc string) {
	key, name := w.r.key, e.Name()
	isOption := w.optDir != "" && rel == w.optDir && strings.HasPrefix(name, "option_")
	if isOption {
		w.optFiles = append(w.optFiles, name)
	}
	kind, isWanted := w.want[p]
	switch {
	case !isWanted && isOption:
		// judged by option_image_mismatch
	case !isWanted && w.wantDir[p]:
		w.s.add(Error, "not_regular_file", key, loc, "expected a directory, found a file")
		w.blocked[p] = true
	case !isWanted:
		w.s.add(Warning, "unexpected_file", key, loc, "file not part of a %s record", w.r.path)
	case !e.Type().IsRegular():
		w.found[p] = true
		w.s.add(Error, "not_regular_file", key, loc, "expected image is not a regular file (%s)", e.Type())
	default:
		w.found[p] = true
		d := checkImage(filepath.Join(dir, name), loc, key, kind, w.opt, w.s)
		if d != nil && rel == w.optDir {
			w.digests[name] = d
		}
	}
}

func underBlocked(p string, blocked map[string]bool) bool {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if blocked[d] {
			return true
		}
	}
	return false
}

// checkOptionFiles compares the option_* files with the options.
func checkOptionFiles(r *recInfo, files []string, loc string, s *sink) {
	named := map[string]bool{}
	for _, o := range r.options {
		if o.file != "" {
			named[o.file] = true
		}
	}
	if len(files) != len(r.options) {
		s.add(Error, "option_image_mismatch", r.key, loc, "%d option files for %d revision options", len(files), len(r.options))
	}
	sort.Strings(files)
	for _, f := range files {
		if named[f] {
			continue
		}
		m := benchmark.OptionFilePattern.FindStringSubmatch(f)
		if m != nil {
			if k, err := strconv.Atoi(m[1]); err == nil && k >= 1 && k <= len(r.options) && r.options[k-1].file != "" {
				s.add(Error, "option_image_mismatch", r.key, loc+"/"+f, "file has suffix %q but option %d is %q", m[2], k, r.options[k-1].file)
				continue
			}
		}
		s.add(Error, "option_image_mismatch", r.key, loc+"/"+f, "no revision option names this file")
	}
}

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// pngHeader is the IHDR content of a PNG.
type pngHeader struct {
	width, height       uint32
	bitDepth, colorType byte
}

// readPNGHeader reads the signature and the IHDR chunk (with its CRC).
func readPNGHeader(r io.Reader) (pngHeader, error) {
	var b [33]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return pngHeader{}, errors.New("file too short for a PNG header")
		}
		return pngHeader{}, err
	}
	if !bytes.Equal(b[:8], pngSignature) {
		return pngHeader{}, errors.New("not a PNG (bad signature)")
	}
	if binary.BigEndian.Uint32(b[8:12]) != 13 || string(b[12:16]) != "IHDR" {
		return pngHeader{}, errors.New("PNG does not start with a valid IHDR chunk")
	}
	if crc32.ChecksumIEEE(b[12:29]) != binary.BigEndian.Uint32(b[29:33]) {
		return pngHeader{}, errors.New("IHDR checksum mismatch")
	}
	h := pngHeader{
		width:     binary.BigEndian.Uint32(b[16:20]),
		height:    binary.BigEndian.Uint32(b[20:24]),
		bitDepth:  b[24],
		colorType: b[25],
	}
	if h.width == 0 || h.height == 0 || h.width > 1<<31-1 || h.height > 1<<31-1 {
		return pngHeader{}, fmt.Errorf("invalid PNG dimensions %d×%d", h.width, h.height)
	}
	return h, nil
}

var colourTypeNames = map[byte]string{0: "greyscale", 2: "RGB", 3: "palette", 4: "greyscale+alpha", 6: "RGBA"}

// openImage is safefile.Open; tests replace it to inject a failure.
var openImage = safefile.Open

// checkImage checks one image file's header, and when opt.Deep is set and
// the header is sane decodes it fully and checks its bytes against the
// build's SHA256SUMS (opt.sums). It returns the decoded image's
// digest (deep mode, decodable images within imagefile's limits), else nil.
func checkImage(name, loc, key string, kind imageKind, opt Options, s *sink) *imageDigest {
	f, err := openImage(name, safefile.NoFollow)
	if err != nil {
		s.add(Error, "image_decode", key, loc, "cannot open: %v", err)
		return nil
	}
	defer func() { _ = f.Close() }() // read-only
	h, err := readPNGHeader(f)
	if err != nil {
		s.add(Error, "image_decode", key, loc, "%v", err)
		return nil
	}
	if h.width != 1024 || h.height != 1024 {
		s.add(Error, "image_size", key, loc, "image is %d×%d, expected 1024×1024", h.width, h.height)
	}
	rgb := h.bitDepth == 8 && h.colorType == 2
	rgba := h.bitDepth == 8 && h.colorType == 6
	if !(rgb || (kind == pointsImage && rgba)) {
		want := "8-bit RGB"
		if kind == pointsImage {
			want = "8-bit RGB or RGBA"
		}
		ct := colourTypeNames[h.colorType]
		if ct == "" {
			ct = fmt.Sprintf("colour type %d", h.colorType)
		}
		s.add(Warning, "image_mode", key, loc, "image is %d-bit %s, expected %s", h.bitDepth, ct, want)
	}
	if !opt.Deep {
		return nil
	}
	if imagefile.CheckSize(imagefile.PNG, int(h.width), int(h.height), nil) != nil {
		return nil // already reported as image_size; never allocate for it
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		s.add(Error, "image_decode", key, loc, "%v", err)
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, imagefile.MaxFileBytes+1))
	switch {
	case err != nil:
		s.add(Error, "image_decode", key, loc, "%v", err)
		return nil
	case len(data) > imagefile.MaxFileBytes:
		s.add(Error, "image_decode", key, loc, "file larger than %d bytes", imagefile.MaxFileBytes)
		return nil
	}
	var sha string
	if opt.sums != nil || opt.Decoded != nil {
		sha = benchmark.SHA256Hex(data)
	}
	if opt.sums != nil {
		sumsFinding(opt.sums.Check(loc, sha), key, loc, s)
	}
	img, err := imagefile.DecodePNG(data)
	if err != nil {
		s.add(Error, "image_decode", key, loc, "decoding failed: %v", err)
		return nil
	}
	if opt.Decoded != nil {
		opt.Decoded(sha)
	}
	var raw maphash.Hash
	raw.SetSeed(digestSeed)
	raw.Write(data)
	d := &imageDigest{pixels: pixelDigest(img), raw: raw.Sum64(), read: int64(len(data))}
	if fi, err := f.Stat(); err == nil {
		d.size = fi.Size()
	}
	return d
}
