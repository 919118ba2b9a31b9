// Package source reads the builder's inputs (spec build.md §2) and orders
// them into candidates (§3).
//
// Every input family ends up as a list of *Case, one per generic manifest
// line (§2.4): ReadSource reads a manifest or candidates file with the line
// checks of §2.4, FromMIMIC converts MIMIC-CXR-JPG + MIMIC-ILS (+ CheXmask)
// inputs into the same lines with their pool (global/basic) attached, and
// Sample turns a list of cases into the ordered, capped candidate list of §3
// under the seeded sampling RNG. WriteCandidates writes candidates.jsonl.
//
// For the build, a Loader resolves a case's lung sources (CheXmask row
// and/or lung PNG pair, §2.4) and its candidate mask into the canonical
// frame of §1; per-case failures are *frame.CaseError with §14 reasons,
// whereas problems with a whole source (a bad manifest line, an unopenable
// CSV) are plain errors the commands turn into exit code 2.
package source

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"regexp"

	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// Case is one manifest or candidates line (§2.4). Paths are absolute, after
// resolution against the manifest's directory.
type Case struct {
	CaseID, Lesion, Label string
	Image                 string
	ImageID               *string
	LesionMasks           []string
	LungMasks             *LungPaths
	Chexmask              *ChexmaskRef
	HeartMask             string
	Report                string
	ReportPath            string
	LocationHints         []string
	Source                json.RawMessage // free-form object, compact JSON, member order kept

	// Candidates only (set by Sample or read from a candidates file).
	Rank       int
	SourceType string // "global" | "basic" | "manifest"; MIMIC negatives are "global"
	SampleSeed *uint64

	Line int // 1-based line number in the file it came from (0 for MIMIC)
}

// LungPaths is a lung PNG pair.
type LungPaths struct{ Right, Left string }

// ChexmaskRef points at one CheXmask database row.
type ChexmaskRef struct {
	CSV       string // absolute path
	ID        string
	SizeCheck bool // default true (§2.3)
}

// KeyID is <lesion>_<case_id>.
func (c *Case) KeyID() string { return c.Lesion + "_" + c.CaseID }

// Positive reports whether the case is labelled positive.
func (c *Case) Positive() bool { return c.Label == "positive" }

// DedupKey is the negative de-duplication key of §3: the image id, else the
// image path.
func (c *Case) DedupKey() string {
	if c.ImageID != nil {
		return "id:" + *c.ImageID
	}
	return "path:" + c.Image
}

// ErrNoLungSource is FromMIMIC's error when neither a CheXmask CSV nor a
// lung PNG pattern is given (the command names its flags).
var ErrNoLungSource = errors.New("MIMIC sources need a lung source: a CheXmask CSV and/or a lung PNG pattern")

// pairIDPattern is the case_id (pair id) pattern of format.md §2.
var pairIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,63}_(positive|negative)_[0-9]+$`)

// ImageSHA256 is the review digest of the CXR: SHA-256 of the file bytes
// (§4). A missing or unreadable file fails the case with image_unreadable.
func ImageSHA256(c *Case) (string, error) {
	return fileSHA256(c.Image, "image_unreadable", "image")
}

// openInput is safefile.Open; tests replace it to inject a failure.
var openInput = safefile.Open

func fileSHA256(path, reason, what string) (string, error) {
	f, err := openInput(path, safefile.Follow)
	if err != nil {
		return "", frame.Fail(reason, "%s %s: %v", what, path, safefile.Reason(err))
	}
	defer func() { _ = f.Close() }() // read-only
	// The size is checked before a byte is hashed, and again while
	// hashing (a file that grows): a file no reader would take (the image
	// limit imagefile applies to every image and mask read) is not read
	// through.
	fi, err := f.Stat()
	if err == nil {
		err = imagefile.CheckFileSize(fi.Size())
	}
	if err != nil {
		return "", frame.Fail(reason, "%s %s: %v", what, path, err)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, imagefile.MaxFileBytes+1))
	if err == nil && n > imagefile.MaxFileBytes {
		err = safefile.TooLarge(-1, imagefile.MaxFileBytes)
	}
	if err != nil {
		return "", frame.Fail(reason, "%s %s: %v", what, path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// MaskSHA256 is the review digest of a canonical candidate mask (§4):
// SHA-256 over its pixels row-major, one byte 0/1 each. m should be the
// 1024×1024 mask returned by Loader.CandidateMask.
func MaskSHA256(m mask.Mask) string {
	sum := sha256.Sum256(m.Pix)
	return hex.EncodeToString(sum[:])
}
