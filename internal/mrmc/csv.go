package mrmc

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/csvcap"
)

// MaxScoresBytes bounds a scores table: a fully crossed study of a
// hundred readers, four modalities and ten thousand cases is four million
// rows of a few tens of bytes, about 100 MB.
const MaxScoresBytes = 256 << 20

// MaxScoreRecordBytes bounds one record (row, quoted line breaks included)
// of a scores table. A row is five short fields (names of a modality, a
// reader and a case, a truth and a score: tens of bytes); 1 MiB is far
// above any real row and keeps the memory encoding/csv spends on one
// record (which it holds whole, with no limit of its own) to a few MiB.
const MaxScoreRecordBytes = 1 << 20

// ScoreColumns are the columns of a scores table, one row per (modality,
// reader, case).
var ScoreColumns = []string{"modality", "reader", "case", "truth", "score"}

// FormatScores writes d as a scores table, the inverse of ParseScores:
// the header ScoreColumns, then one row per modality, reader and case in
// d's order (so that ParseScores gives d back), in the project's CSV
// dialect. Truth is NA when d has none (accuracy does not read it).
func FormatScores(d *Data) []byte {
	rows := make([][]string, 0, len(d.Modalities)*len(d.Readers)*len(d.Cases))
	for i, m := range d.Modalities {
		for j, r := range d.Readers {
			for k, c := range d.Cases {
				truth := "NA"
				if d.Truth != nil {
					truth = strconv.Itoa(d.Truth[k])
				}
				rows = append(rows, []string{m, r, c, truth, csvNum(d.Scores[i][j][k])})
			}
		}
	}
	return writeCSV(ScoreColumns, rows)
}

// ParseScores reads a scores table (CSV with the header ScoreColumns, in
// any order) into a fully crossed study; name labels errors ("FILE line
// N: field: reason"). Modalities, readers and cases keep the order of
// their first row. For accuracy the truth column is not read and may be
// empty. r is read as a stream, one record at a time: a record longer
// than MaxScoreRecordBytes or a stream longer than MaxScoresBytes is
// refused as soon as it is met, so memory holds the study read so far
// and one record.
func ParseScores(r io.Reader, name string, fom FOM) (*Data, error) {
	if _, err := ParseFOM(string(fom)); err != nil {
		return nil, err
	}
	cr := csv.NewReader(csvcap.New(r, MaxScoreRecordBytes, MaxScoresBytes))
	cr.ReuseRecord = true
	readErr := func(err error) error {
		if ce, ok := csvcap.As(err); ok {
			return fmt.Errorf("%s line %d: %s (not a scores table)", name, ce.Line, ce.Msg)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty, want the header %s", name, strings.Join(ScoreColumns, ","))
		}
		return nil, readErr(err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("%s line 1: column %q twice", name, h)
		}
		col[h] = i
	}
	for _, c := range ScoreColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s line 1: no column %q (want %s)", name, c, strings.Join(ScoreColumns, ","))
		}
	}
	d := &Data{FOM: fom}
	mIdx, rIdx, cIdx := map[string]int{}, map[string]int{}, map[string]int{}
	index := func(m map[string]int, list *[]string, v string) int {
		i, ok := m[v]
		if !ok {
			i = len(*list)
			m[v] = i
			*list = append(*list, v)
		}
		return i
	}
	// The rows are kept in a slice and checked for repeated (modality,
	// reader, case) combinations in one pass over a dense table once the
	// study's size is known, not by a map probed on every row (a million
	// rows of a map cost seconds in cache misses). The first error in file
	// order is still the one reported: before any other error is
	// returned, the rows read so far are checked for a repeat.
	var rows []scoreRow
	var truth []int8 // per case: -1 unknown
	var truthLine []int
	firstErr := func(err error) error {
		if dup := firstRepeat(rows, len(d.Modalities), len(d.Readers), len(d.Cases)); dup != nil {
			return fmt.Errorf("%s line %d: modality %s, reader %s, case %s already scored on line %d", name, dup.line,
				d.Modalities[dup.row.m], d.Readers[dup.row.r], d.Cases[dup.row.c], dup.prev)
		}
		return err
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, firstErr(readErr(err))
		}
		line, _ := cr.FieldPos(0)
		field := func(c string) string { return strings.TrimSpace(rec[col[c]]) }
		for _, c := range []string{"modality", "reader", "case"} {
			if field(c) == "" {
				return nil, firstErr(fmt.Errorf("%s line %d: field %s: empty", name, line, c))
			}
		}
		s, err := strconv.ParseFloat(field("score"), 64)
		if err != nil || math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, firstErr(fmt.Errorf("%s line %d: field score: %q is not a finite number", name, line, field("score")))
		}
		if fom == Accuracy && s != 0 && s != 1 {
			return nil, firstErr(fmt.Errorf("%s line %d: field score: %q: accuracy wants 0 or 1", name, line, field("score")))
		}
		k := scoreRow{m: index(mIdx, &d.Modalities, field("modality")), r: index(rIdx, &d.Readers, field("reader")), c: index(cIdx, &d.Cases, field("case")),
			line: line, score: s}
		rows = append(rows, k)
		for len(truth) < len(d.Cases) {
			truth, truthLine = append(truth, -1), append(truthLine, 0)
		}
		if fom == AUC {
			t, err := strconv.Atoi(field("truth"))
			if err != nil || (t != 0 && t != 1) {
				return nil, firstErr(fmt.Errorf("%s line %d: field truth: %q: want 0 or 1", name, line, field("truth")))
			}
			if prev := truth[k.c]; prev >= 0 && int(prev) != t {
				return nil, firstErr(fmt.Errorf("%s line %d: field truth: case %s is %d here and %d on line %d", name, line, field("case"), t, prev, truthLine[k.c]))
			}
			truth[k.c], truthLine[k.c] = int8(t), line
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows after the header", name)
	}
	if err := firstErr(nil); err != nil {
		return nil, err
	}
	nt, nr, nc := len(d.Modalities), len(d.Readers), len(d.Cases)
	// No row repeats another, so the rows fill distinct cells, and the
	// study is crossed exactly when there are as many rows as cells.
	if !cellsAtMost(nt, nr, nc, len(rows)) || nt*nr*nc != len(rows) {
		scored := make(map[[3]int]bool, len(rows))
		for _, row := range rows {
			scored[[3]int{row.m, row.r, row.c}] = true
		}
		for i := range nt {
			for j := range nr {
				for k := range nc {
					if !scored[[3]int{i, j, k}] {
						return nil, fmt.Errorf("%s: modality %s, reader %s has no score for case %s: every reader must score every case in every modality", name, d.Modalities[i], d.Readers[j], d.Cases[k])
					}
				}
			}
		}
	}
	d.Scores = make([][][]float64, nt)
	for i := range d.Scores {
		d.Scores[i] = make([][]float64, nr)
		for j := range d.Scores[i] {
			d.Scores[i][j] = make([]float64, nc)
		}
	}
	for _, row := range rows {
		d.Scores[row.m][row.r][row.c] = row.score
	}
	if fom == AUC {
		d.Truth = make([]int, nc)
		for k := range d.Truth {
			d.Truth[k] = int(truth[k])
		}
	}
	if err := d.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// scoreRow is one row of a scores table: indexes of its modality, reader
// and case, its line and its score.
type scoreRow struct {
	m, r, c int
	line    int
	score   float64
}

// cellsAtMost reports whether a t × r × c table has at most n cells,
// without computing a product that could overflow.
func cellsAtMost(t, r, c, n int) bool {
	if t == 0 || r == 0 || c == 0 {
		return true
	}
	return t <= n && r <= n/t && c <= n/(t*r)
}

// repeatedRow is a row whose (modality, reader, case) an earlier row, on line
// prev, already scored.
type repeatedRow struct {
	row        scoreRow
	line, prev int
}

// firstRepeat is the first row, in file order, that repeats an earlier
// row's combination, or nil. With no more cells than rows it marks a
// dense table; a table of more cells than rows (not crossed, which the
// caller reports next) is checked with a map of the rows instead.
func firstRepeat(rows []scoreRow, t, r, c int) *repeatedRow {
	if cellsAtMost(t, r, c, len(rows)) {
		seen := make([]int, t*r*c) // line of the first row of each cell, 0 none
		for _, row := range rows {
			i := (row.m*r+row.r)*c + row.c
			if seen[i] != 0 {
				return &repeatedRow{row: row, line: row.line, prev: seen[i]}
			}
			seen[i] = row.line
		}
		return nil
	}
	seen := make(map[[3]int]int, len(rows))
	for _, row := range rows {
		k := [3]int{row.m, row.r, row.c}
		if prev, ok := seen[k]; ok {
			return &repeatedRow{row: row, line: row.line, prev: prev}
		}
		seen[k] = row.line
	}
	return nil
}
