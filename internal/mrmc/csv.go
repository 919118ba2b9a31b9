package mrmc

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
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
// reader, case). A split-plot study's table has a sixth, BlockColumn.
var ScoreColumns = []string{"modality", "reader", "case", "truth", "score"}

// BlockColumn is the optional column of a scores table that names each
// row's block in a split-plot study (the same for every row of a reader
// and every row of a case).
const BlockColumn = "block"

// FormatScores writes d as a scores table, the inverse of ParseScores:
// the header ScoreColumns (and BlockColumn for a split-plot study), then
// one row per modality, reader and case the reader scored, in d's order
// (so that ParseScores gives d back), in the project's CSV dialect. Truth
// is NA when d has none (accuracy does not read it).
func FormatScores(d *Data) []byte {
	header := ScoreColumns
	if d.Blocks != nil {
		header = append(slices.Clone(ScoreColumns), BlockColumn)
	}
	rows := make([][]string, 0, len(d.Modalities)*len(d.Readers)*len(d.Cases))
	for i, m := range d.Modalities {
		for j, r := range d.Readers {
			for k, c := range d.Cases {
				if d.Blocks != nil && d.CaseBlock[k] != d.ReaderBlock[j] {
					continue
				}
				truth := "NA"
				if d.Truth != nil {
					truth = strconv.Itoa(d.Truth[k])
				}
				row := []string{m, r, c, truth, csvNum(d.Scores[i][j][k])}
				if d.Blocks != nil {
					row = append(row, d.Blocks[d.ReaderBlock[j]])
				}
				rows = append(rows, row)
			}
		}
	}
	return writeCSV(header, rows)
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
	mIdx, rIdx, cIdx, bIdx := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	_, hasBlock := col["block"]
	var blockNames []string
	blockOf := &blockColumn{d: d, readerLine: map[int]int{}, caseLine: map[int]int{}, reader: map[int]int{}, caseBlock: map[int]int{}}
	if !hasBlock {
		blockOf = nil
	}
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
			line: line, score: s, block: -1}
		if hasBlock {
			b := field("block")
			if b == "" {
				return nil, firstErr(fmt.Errorf("%s line %d: field block: empty", name, line))
			}
			k.block = index(bIdx, &blockNames, b)
			if err := blockOf.set(k, line); err != nil {
				return nil, firstErr(fmt.Errorf("%s line %d: field block: %s", name, line, err.Error()))
			}
		}
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
	d.Scores = make([][][]float64, nt)
	for i := range d.Scores {
		d.Scores[i] = make([][]float64, nr)
		for j := range d.Scores[i] {
			d.Scores[i][j] = make([]float64, nc)
		}
	}
	if err := setDesign(d, rows, blockOf, blockNames, name); err != nil {
		return nil, err
	}
	for i := range d.Scores {
		for j := range d.Scores[i] {
			if d.Blocks == nil {
				continue
			}
			for k := range d.Scores[i][j] {
				if d.CaseBlock[k] != d.ReaderBlock[j] {
					d.Scores[i][j][k] = math.NaN()
				}
			}
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
	block   int // -1: no block column
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

// blockColumn keeps the block column's value per reader and per case, and
// the line that first gave it.
type blockColumn struct {
	d                    *Data
	reader, caseBlock    map[int]int
	readerLine, caseLine map[int]int
}

// set records row k's block for its reader and its case, or says how it
// contradicts an earlier row.
func (bc *blockColumn) set(k scoreRow, line int) error {
	if b, ok := bc.reader[k.r]; ok && b != k.block {
		return fmt.Errorf("reader %s is in another block on line %d", bc.d.Readers[k.r], bc.readerLine[k.r])
	}
	if b, ok := bc.caseBlock[k.c]; ok && b != k.block {
		return fmt.Errorf("case %s is in another block on line %d", bc.d.Cases[k.c], bc.caseLine[k.c])
	}
	if _, ok := bc.reader[k.r]; !ok {
		bc.reader[k.r], bc.readerLine[k.r] = k.block, line
	}
	if _, ok := bc.caseBlock[k.c]; !ok {
		bc.caseBlock[k.c], bc.caseLine[k.c] = k.block, line
	}
	return nil
}

// setDesign decides a study's design from its rows and sets d's blocks:
// fully crossed when every reader scored every case in every modality;
// split-plot when the block column says so, or, without it, when the
// readers fall into groups that scored the same cases, the groups' case
// sets disjoint; else an error saying which cell is missing or where the
// design breaks.
func setDesign(d *Data, rows []scoreRow, bc *blockColumn, blockNames []string, name string) error {
	nt, nr, nc := len(d.Modalities), len(d.Readers), len(d.Cases)
	crossed := cellsAtMost(nt, nr, nc, len(rows)) && nt*nr*nc == len(rows)
	readerBlock, caseBlock := make([]int, nr), make([]int, nc)
	var names []string
	switch {
	case bc != nil:
		names = blockNames
		for j := range nr {
			readerBlock[j] = bc.reader[j]
		}
		for k := range nc {
			caseBlock[k] = bc.caseBlock[k]
		}
	case crossed:
		return nil
	default:
		// The readers linked by a case they both scored read one block:
		// the blocks are the connected groups of readers, and their case
		// sets are disjoint by construction.
		parent := make([]int, nr)
		for j := range parent {
			parent[j] = j
		}
		root := func(j int) int {
			for parent[j] != j {
				parent[j] = parent[parent[j]]
				j = parent[j]
			}
			return j
		}
		owner := make([]int, nc)
		for k := range owner {
			owner[k] = -1
		}
		for _, row := range rows {
			if o := owner[row.c]; o < 0 {
				owner[row.c] = row.r
			} else if a, b := root(o), root(row.r); a != b {
				parent[max(a, b)] = min(a, b)
			}
		}
		group := map[int]int{}
		size := map[int]int{}
		for j := range nr {
			g, ok := group[root(j)]
			if !ok {
				g = len(names)
				group[root(j)] = g
				names = append(names, strconv.Itoa(g+1))
			}
			readerBlock[j] = g
			size[g]++
		}
		for k, o := range owner {
			caseBlock[k] = readerBlock[o]
		}
		for _, n := range size {
			if n < 2 {
				// Not a split-plot study the analysis can take:
				// report what a crossed study misses.
				names = names[:1]
			}
		}
	}
	if len(names) == 1 {
		if crossed {
			return nil
		}
		return missingCell(d, rows, nil, nil, name)
	}
	d.Blocks, d.ReaderBlock, d.CaseBlock = names, readerBlock, caseBlock
	for _, row := range rows {
		if readerBlock[row.r] != caseBlock[row.c] {
			return fmt.Errorf("%s line %d: reader %s of block %s scored case %s of block %s: in a split-plot study a reader scores only the cases of its block",
				name, row.line, d.Readers[row.r], names[readerBlock[row.r]], d.Cases[row.c], names[caseBlock[row.c]])
		}
	}
	if err := missingCell(d, rows, readerBlock, caseBlock, name); err != nil {
		return err
	}
	return nil
}

// missingCell names the first (modality, reader, case) the design wants
// scored and no row scored (readerBlock nil: fully crossed), or nil.
func missingCell(d *Data, rows []scoreRow, readerBlock, caseBlock []int, name string) error {
	scored := make(map[[3]int]bool, len(rows))
	for _, row := range rows {
		scored[[3]int{row.m, row.r, row.c}] = true
	}
	for i := range d.Modalities {
		for j := range d.Readers {
			for k := range d.Cases {
				if readerBlock != nil && readerBlock[j] != caseBlock[k] {
					continue
				}
				if scored[[3]int{i, j, k}] {
					continue
				}
				if readerBlock == nil {
					return fmt.Errorf("%s: modality %s, reader %s has no score for case %s: neither fully crossed (every reader scores every case in every modality) nor split-plot (readers in blocks of at least 2, each scoring every case of its block only)", name, d.Modalities[i], d.Readers[j], d.Cases[k])
				}
				return fmt.Errorf("%s: modality %s, reader %s has no score for case %s: in a split-plot study every reader scores every case of its block (%s) in every modality", name, d.Modalities[i], d.Readers[j], d.Cases[k], d.Blocks[readerBlock[j]])
			}
		}
	}
	return nil
}
