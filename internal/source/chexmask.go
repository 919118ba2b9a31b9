package source

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/csvcap"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// ChexRow is the part of one CheXmask database row the builder uses.
// Cells are kept as text and parsed when a case needs them, so a damaged
// row fails only its own case.
type ChexRow struct {
	ID        string `json:"id"`
	Line      int    `json:"line"` // 1-based line where the record starts
	RCAMean   string `json:"rca_mean"`
	Landmarks string `json:"landmarks"`
	Right     string `json:"right"`
	Left      string `json:"left"`
	Heart     string `json:"heart"`
	Height    string `json:"height"`
	Width     string `json:"width"`
}

// ChexTable holds the rows of one CheXmask CSV for the ids a run needs.
type ChexTable struct {
	Path       string
	Rows       map[string]*ChexRow
	Duplicates []string // needed ids that appeared again after their first row (first row wins)
}

// idColumns is §2.3's default id-column preference.
var idColumns = []string{"dicom_id", "ImageID", "image_id"}

// ReadChexmask streams a CheXmask CSV (RFC 4180; plain or gzip, detected by
// its magic bytes) once and keeps the rows whose id is in need. idColumn
// "" selects the first present of dicom_id, ImageID, image_id. A file that
// cannot be opened or parsed, or lacks a column, is an error naming the
// file (and line).
func ReadChexmask(path string, need map[string]bool, idColumn string) (*ChexTable, error) {
	f, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return nil, &LineError{File: path, Msg: fmt.Sprintf("cannot open the CheXmask CSV: %v", safefile.Reason(err))}
	}
	defer func() { _ = f.Close() }() // read-only
	packed := &countReader{r: f}
	br := bufio.NewReaderSize(packed, 1<<20)
	var r io.Reader = br
	var packedBytes func() int64
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, &LineError{File: path, Msg: fmt.Sprintf("bad gzip stream: %v", err)}
		}
		defer func() { _ = gz.Close() }() // read-only
		r = bufio.NewReaderSize(gz, 1<<20)
		packedBytes = func() int64 { return packed.n }
	}
	capped := csvcap.New(r, MaxChexmaskRecordBytes, MaxChexmaskBytes)
	capped.Packed, capped.RatioAfter, capped.MaxRatio = packedBytes, chexmaskRatioAfter, MaxChexmaskRatio
	cr := csv.NewReader(capped)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, csvError(path, err, "cannot read the header")
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := col[h]; !dup {
			col[h] = i
		}
	}
	idName := idColumn
	if idName == "" {
		for _, c := range idColumns {
			if _, ok := col[c]; ok {
				idName = c
				break
			}
		}
		if idName == "" {
			return nil, &LineError{File: path, Line: 1, Msg: "no id column (looked for dicom_id, ImageID, image_id; set chexmask_id_column)"}
		}
	}
	for _, need := range []string{idName, "Right Lung", "Left Lung", "Height", "Width"} {
		if _, ok := col[need]; !ok {
			return nil, &LineError{File: path, Line: 1, Msg: fmt.Sprintf("missing column %q", need)}
		}
	}
	get := func(rec []string, name string) string {
		if i, ok := col[name]; ok {
			return rec[i]
		}
		return ""
	}
	t := &ChexTable{Path: path, Rows: map[string]*ChexRow{}}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(path, err, "")
		}
		id := rec[col[idName]]
		if !need[id] {
			continue
		}
		if _, dup := t.Rows[id]; dup {
			t.Duplicates = append(t.Duplicates, id)
			continue
		}
		line, _ := cr.FieldPos(0)
		t.Rows[id] = &ChexRow{
			ID: id, Line: line,
			RCAMean:   get(rec, "Dice RCA (Mean)"),
			Landmarks: get(rec, "Landmarks"),
			Right:     get(rec, "Right Lung"),
			Left:      get(rec, "Left Lung"),
			Heart:     get(rec, "Heart"),
			Height:    get(rec, "Height"),
			Width:     get(rec, "Width"),
		}
	}
	return t, nil
}

// MaxChexmaskRecordBytes bounds one record (row) of a CheXmask CSV. A real
// row, RLE cells of a few thousand pixels a side plus 166 landmarks, is tens
// of kilobytes; a longer one is damaged, and reading it whole could take
// gigabytes.
const MaxChexmaskRecordBytes = 4 << 20

// MaxChexmaskBytes bounds the bytes read from one CheXmask CSV, after gzip
// decompression: a released CSV is a few gigabytes, while a small gzip
// file can expand without end.
const MaxChexmaskBytes = 64 << 30

// MaxChexmaskRatio bounds how many times larger a gzip-compressed
// CheXmask CSV may grow, checked once chexmaskRatioAfter bytes are out:
// numbers in text compress three- to fivefold, while a decompression bomb
// of repeated rows expands hundreds of times and would only waste time.
const (
	MaxChexmaskRatio   = 100
	chexmaskRatioAfter = 256 << 20
)

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func csvError(path string, err error, what string) error {
	if ce, ok := csvcap.As(err); ok {
		msg := ce.Msg
		switch ce.Kind {
		case csvcap.Total:
			msg += " (after decompression)"
		case csvcap.Ratio:
			msg += " (a decompression bomb, not a CheXmask release)"
		}
		return &LineError{File: path, Line: ce.Line, Msg: msg}
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &LineError{File: path, Line: pe.StartLine, Msg: fmt.Sprintf("CSV: %v", pe.Err)}
	}
	if what == "" {
		what = "CSV read error"
	}
	return &LineError{File: path, Msg: fmt.Sprintf("%s: %v", what, err)}
}

// maxCacheBytes bounds a cache file read back (the kept rows of a few
// thousand cases are tens of megabytes).
const maxCacheBytes = 1 << 30

// readChexmaskCached is ReadChexmask with a cache of the kept rows under
// workDir/chexmask/, keyed by the CSV's path, size, modification time, the
// id column and the needed ids, so a resumed build does not stream a
// multi-gigabyte CSV again. workDir "" disables the cache.
func readChexmaskCached(j *job.Job, path string, need map[string]bool, idColumn, workDir string) (*ChexTable, error) {
	if workDir == "" {
		return ReadChexmask(path, need, idColumn)
	}
	f, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return nil, &LineError{File: path, Msg: fmt.Sprintf("cannot open the CheXmask CSV: %v", safefile.Reason(err))}
	}
	fi, err := f.Stat()
	_ = f.Close() // read-only
	if err != nil {
		return nil, &LineError{File: path, Msg: fmt.Sprintf("cannot open the CheXmask CSV: %v", safefile.Reason(err))}
	}
	ids := slices.Sorted(maps.Keys(need))
	h := sha256.New()
	fmt.Fprintf(h, "chexmask-cache/1\x00%s\x00%d\x00%d\x00%s\x00", path, fi.Size(), fi.ModTime().UnixNano(), idColumn)
	for _, id := range ids {
		fmt.Fprintf(h, "%s\x00", id)
	}
	cache := filepath.Join(workDir, "chexmask", hex.EncodeToString(h.Sum(nil))[:32]+".json")
	if data, err := safefile.ReadFile(cache, maxCacheBytes, safefile.NoFollow); err == nil {
		var t ChexTable
		if json.Unmarshal(data, &t) == nil && t.Rows != nil {
			t.Path = path
			return &t, nil
		}
	}
	t, err := ReadChexmask(path, need, idColumn)
	if err != nil {
		return nil, err
	}
	if data, err := json.Marshal(t); err == nil {
		if os.MkdirAll(filepath.Dir(cache), 0o755) == nil {
			_ = atomicfile.WriteFile(j, cache, data) // a failed cache write only costs time
		}
	}
	return t, nil
}

// size returns the row's recorded width and height.
func (r *ChexRow) size() (w, h int, err error) {
	parse := func(s string) (int, bool) {
		s = strings.TrimSpace(s)
		if n, err := strconv.Atoi(s); err == nil {
			return n, true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f != math.Trunc(f) || f < 1 || f > imagefile.MaxSide {
			return 0, false
		}
		return int(f), true
	}
	w, okw := parse(r.Width)
	h, okh := parse(r.Height)
	if !okw || !okh || w < 1 || h < 1 || w > imagefile.MaxSide || h > imagefile.MaxSide {
		return 0, 0, fmt.Errorf("Height/Width %q/%q are not sizes in 1…%d", r.Height, r.Width, imagefile.MaxSide)
	}
	return w, h, nil
}

var numberRE = regexp.MustCompile(`[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`)

// landmarks extracts every number of the cell in order and pairs them as
// (x, y) points (§2.3: releases write "x,y,…" or a bracketed array).
func landmarks(cell string) []mask.PointF {
	nums := numberRE.FindAllString(cell, -1)
	pts := make([]mask.PointF, 0, len(nums)/2)
	for i := 0; i+1 < len(nums); i += 2 {
		x, err1 := strconv.ParseFloat(nums[i], 64)
		y, err2 := strconv.ParseFloat(nums[i+1], 64)
		if err1 != nil || err2 != nil {
			return nil
		}
		pts = append(pts, mask.PointF{X: x, Y: y})
	}
	return pts
}

// Landmark ranges: right lung, left lung, heart (§2.3).
const (
	rightLandmarks = 44
	leftLandmarks  = 50
)

// decodePart decodes one RLE cell at w×h; an empty cell falls back to the
// landmark polygon of part ("right", "left" or "heart").
func (r *ChexRow) decodePart(part string, w, h int) (mask.Mask, error) {
	var cell string
	switch part {
	case "right":
		cell = r.Right
	case "left":
		cell = r.Left
	default:
		cell = r.Heart
	}
	if strings.TrimSpace(cell) != "" {
		return mask.DecodeRLE(cell, h, w)
	}
	pts := landmarks(r.Landmarks)
	var poly []mask.PointF
	switch part {
	case "right":
		poly = pts[:min(len(pts), rightLandmarks)]
	case "left":
		if len(pts) > rightLandmarks {
			poly = pts[rightLandmarks:min(len(pts), rightLandmarks+leftLandmarks)]
		}
	default:
		if len(pts) > rightLandmarks+leftLandmarks {
			poly = pts[rightLandmarks+leftLandmarks:]
		}
	}
	if len(poly) < 3 {
		return mask.New(w, h), nil // nothing to fill; the build reports lung_mask_empty
	}
	return mask.FillPolygon(poly, w, h), nil
}
