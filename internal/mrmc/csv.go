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
	type cell struct{ m, r, c int }
	type entry struct {
		score float64
		line  int
	}
	scores := map[cell]entry{}
	truth := map[int]int{}
	truthLine := map[int]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, readErr(err)
		}
		line, _ := cr.FieldPos(0)
		field := func(c string) string { return strings.TrimSpace(rec[col[c]]) }
		for _, c := range []string{"modality", "reader", "case"} {
			if field(c) == "" {
				return nil, fmt.Errorf("%s line %d: field %s: empty", name, line, c)
			}
		}
		s, err := strconv.ParseFloat(field("score"), 64)
		if err != nil || math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("%s line %d: field score: %q is not a finite number", name, line, field("score"))
		}
		if fom == Accuracy && s != 0 && s != 1 {
			return nil, fmt.Errorf("%s line %d: field score: %q: accuracy wants 0 or 1", name, line, field("score"))
		}
		k := cell{index(mIdx, &d.Modalities, field("modality")), index(rIdx, &d.Readers, field("reader")), index(cIdx, &d.Cases, field("case"))}
		if prev, dup := scores[k]; dup {
			return nil, fmt.Errorf("%s line %d: modality %s, reader %s, case %s already scored on line %d", name, line, field("modality"), field("reader"), field("case"), prev.line)
		}
		scores[k] = entry{s, line}
		if fom == AUC {
			t, err := strconv.Atoi(field("truth"))
			if err != nil || (t != 0 && t != 1) {
				return nil, fmt.Errorf("%s line %d: field truth: %q: want 0 or 1", name, line, field("truth"))
			}
			if prev, ok := truth[k.c]; ok && prev != t {
				return nil, fmt.Errorf("%s line %d: field truth: case %s is %d here and %d on line %d", name, line, field("case"), t, prev, truthLine[k.c])
			}
			truth[k.c], truthLine[k.c] = t, line
		}
	}
	if len(scores) == 0 {
		return nil, fmt.Errorf("%s: no rows after the header", name)
	}
	d.Scores = make([][][]float64, len(d.Modalities))
	for i := range d.Modalities {
		d.Scores[i] = make([][]float64, len(d.Readers))
		for j := range d.Readers {
			d.Scores[i][j] = make([]float64, len(d.Cases))
			for c := range d.Cases {
				e, ok := scores[cell{i, j, c}]
				if !ok {
					return nil, fmt.Errorf("%s: modality %s, reader %s has no score for case %s: every reader must score every case in every modality", name, d.Modalities[i], d.Readers[j], d.Cases[c])
				}
				d.Scores[i][j][c] = e.score
			}
		}
	}
	if fom == AUC {
		d.Truth = make([]int, len(d.Cases))
		for c := range d.Cases {
			d.Truth[c] = truth[c]
		}
	}
	if err := d.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}
