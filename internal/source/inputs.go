package source

import (
	"context"
	"errors"
	"fmt"
	_ "image/jpeg" // registers JPEG for image.DecodeConfig
	_ "image/png"  // registers PNG for image.DecodeConfig
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// shownProblems is how many bad inputs CheckInputs names before counting
// the rest.
const shownProblems = 5

// inputRef is one file a candidate references.
type inputRef struct {
	path, what, key string
	kind            inputKind
}

type inputKind int

const (
	kindImage inputKind = iota // PNG or JPEG
	kindMask                   // PNG
	kindCSV                    // any regular file
)

// CheckInputs checks every file the cases reference before candidates are
// written (build.md §2.4 line checks): each image and mask must be
// a regular file (a link only to one; a FIFO never blocks) with a readable
// header of a size the build accepts — PNG or JPEG for images, PNG for
// masks, 1…mask.MaxSide per side and at most mask.MaxPixels — and each
// CheXmask CSV a regular file. Every distinct path is checked once, over a
// bounded pool of workers; only headers are read. The error names the
// first few bad files, in case order, and counts the rest. Once ctx ends
// no further file is checked and the error is ctx's.
func CheckInputs(ctx context.Context, cases []*Case) error {
	refs := inputRefs(cases)
	problems := make([]string, len(refs))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(len(refs), max(4, 2*runtime.GOMAXPROCS(0)), 16); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				problems[i] = checkInput(refs[i])
			}
		}()
	}
feed:
	for i := range refs {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}

	var shown []string
	bad := 0
	for i, p := range problems {
		if p == "" {
			continue
		}
		bad++
		if len(shown) < shownProblems {
			r := refs[i]
			shown = append(shown, fmt.Sprintf("%s %s (case %s): %s", r.what, r.path, r.key, p))
		}
	}
	if bad == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d of the %d input files the candidates reference cannot be used: %s", bad, len(refs), strings.Join(shown, "; "))
	if bad > len(shown) {
		msg += fmt.Sprintf("; and %d more", bad-len(shown))
	}
	return errors.New(msg)
}

// inputRefs lists the distinct files of the cases, per role (a file used
// as an image and as a mask is checked as both), in case order.
func inputRefs(cases []*Case) []inputRef {
	var refs []inputRef
	type use struct {
		path string
		kind inputKind
	}
	seen := map[use]bool{}
	add := func(c *Case, path, what string, kind inputKind) {
		if path == "" || seen[use{path, kind}] {
			return
		}
		seen[use{path, kind}] = true
		refs = append(refs, inputRef{path: path, what: what, key: c.KeyID(), kind: kind})
	}
	for _, c := range cases {
		add(c, c.Image, "image", kindImage)
		for _, m := range c.LesionMasks {
			add(c, m, "lesion mask", kindMask)
		}
		if c.LungMasks != nil {
			add(c, c.LungMasks.Right, "right lung mask", kindMask)
			add(c, c.LungMasks.Left, "left lung mask", kindMask)
		}
		add(c, c.HeartMask, "heart mask", kindMask)
		if c.Chexmask != nil {
			add(c, c.Chexmask.CSV, "CheXmask CSV", kindCSV)
		}
	}
	return refs
}

// checkInput returns "" when the file is usable, else the reason.
func checkInput(r inputRef) string {
	if r.kind == kindCSV {
		if err := regularFile(r.path); err != nil {
			return err.Error()
		}
		return ""
	}
	format, _, _, err := checkImageHeader(r.path)
	switch {
	case err != nil:
		return err.Error()
	case r.kind == kindMask && format != "png":
		return fmt.Sprintf("a %s file, not a PNG", strings.ToUpper(format))
	}
	return ""
}

// CheckImage applies CheckInputs' rule to one image: a regular file (or
// a link to one) whose PNG or JPEG header is readable and within the size
// limits. Only the header is read.
func CheckImage(path string) error {
	if _, _, _, err := checkImageHeader(path); err != nil {
		return frame.Fail("image_unreadable", "image %s: %v", path, err)
	}
	return nil
}

// regularFile checks, never opening the file, that path is a regular file
// or a link to one.
func regularFile(path string) error {
	err := safefile.CheckRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("no such file")
	}
	return err
}

// checkImageHeader reads the PNG or JPEG header of the regular file at
// path without decoding pixels, and applies the one image size limit
// (imagefile). The Lstat first gives the plain reasons ("no such file",
// "not a regular file (named pipe)"). format is "png" or "jpeg".
func checkImageHeader(path string) (format string, width, height int, err error) {
	if err := regularFile(path); err != nil {
		return "", 0, 0, err
	}
	format, width, height, err = imagefile.CheckHeader(path)
	if err != nil {
		return "", 0, 0, safefile.Reason(err)
	}
	return format, width, height, nil
}

// mimicFilesDir returns the files/ directory of a MIMIC-CXR-JPG copy
// given either its root (the directory holding files/) or files/ itself
// (holding the p10 … p19 folders), a natural mistake to make.
func mimicFilesDir(dir string) (string, error) {
	if fi, err := os.Stat(filepath.Join(dir, "files")); err == nil && fi.IsDir() {
		return filepath.Join(dir, "files"), nil
	}
	for i := 10; i <= 19; i++ {
		if fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("p%d", i))); err == nil && fi.IsDir() {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%s: neither a MIMIC-CXR-JPG root (holding files/) nor its files/ directory (holding p10 … p19)", dir)
}
