package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/results"
)

// The item browser's index is embedded in index.html as arrays, not
// objects, so that 2,100 items × 14 runs stay a few hundred kB:
//
//	keys[i], lesion[i] (index into lesions), path[i] (index into paths),
//	runs[r].s: one character per item, code = 63 + bits, where bits 0–3
//	are stages 1–4 correct, bit 4 = error record, bit 5 = no record.
//
// Item details sit in sidecar files data/c<C>.js, each calling
// CHX.chunk(C, [detail, ...]) for items C·ChunkSize onwards.
type itemIndex struct {
	Keys    []string         `json:"keys"`
	Lesion  []int            `json:"lesion"`
	Path    []int            `json:"path"`
	Lesions []string         `json:"lesions"`
	Paths   []benchmark.Path `json:"paths"`
	Runs    []indexRun       `json:"runs"`
	Modes   []string         `json:"modes"`
	Images  string           `json:"images"` // prefix of image URLs ("" when none)
	Chunk   int              `json:"chunk"`  // items per sidecar file (ChunkSize)
	Flags   []indexFlag      `json:"flags"`  // item-health flags (itemhealth.go)
}

type indexRun struct {
	Name  string `json:"name"`
	Mode  string `json:"mode"`
	Parse string `json:"parse"`
	S     string `json:"s"`
}

const (
	bitError   = 16
	bitMissing = 32
)

// items are the keys shown in the browser: the benchmark's records that
// any scored run has, in benchmark order (or, without a benchmark, the
// union of the runs' keys in index order).
type item struct {
	key    string
	lesion int
	path   int
	recs   []*results.Record // per scored run; nil when absent
}

func collectItems(res *analysis.Result, runs []*analysis.RunResult) []*item {
	byKey := map[string]*item{}
	var order []*item
	add := func(key, lesion string, p benchmark.Path, idx int) *item {
		it := byKey[key]
		if it == nil {
			it = &item{key: key, lesion: slices.Index(res.Lesions, lesion) - 1, path: slices.Index(benchmark.Paths, p), recs: make([]*results.Record, len(runs))}
			byKey[key] = it
			order = append(order, it)
		}
		return it
	}
	if b := res.Set.Bench; b != nil {
		present := map[string]bool{}
		for _, rr := range runs {
			for _, r := range rr.Run.Records {
				present[r.KeyID] = true
			}
		}
		for i, r := range b.Records {
			if present[r.KeyID] {
				add(r.KeyID, r.Lesion, r.Path(), i)
			}
		}
	}
	for ri, rr := range runs {
		for _, r := range rr.Run.Records {
			it := byKey[r.KeyID]
			if it == nil {
				it = add(r.KeyID, r.Lesion, r.QAPath, r.Index)
			}
			it.recs[ri] = r
		}
	}
	return order
}

// statusChar encodes a record's outcome for the index.
func statusChar(r *results.Record) byte {
	if r == nil {
		return 63 + bitMissing
	}
	if r.Status != results.StatusOK {
		return 63 + bitError
	}
	s, ok := analysis.ScoreRecord(r, false)
	bits := 0
	if ok {
		for k := 0; k < 4; k++ {
			if s.App[k] && s.Cor[k] {
				bits |= 1 << k
			}
		}
	}
	return byte(63 + bits)
}

func buildIndex(items []*item, runs []*analysis.RunResult, lesions, modes []string, imgPrefix string) *itemIndex {
	ix := &itemIndex{Lesions: lesions, Paths: benchmark.Paths, Modes: modes, Images: imgPrefix, Chunk: ChunkSize}
	for _, it := range items {
		ix.Keys = append(ix.Keys, it.key)
		ix.Lesion = append(ix.Lesion, it.lesion)
		ix.Path = append(ix.Path, it.path)
	}
	for ri, rr := range runs {
		s := make([]byte, len(items))
		for i, it := range items {
			s[i] = statusChar(it.recs[ri])
		}
		ix.Runs = append(ix.Runs, indexRun{Name: rr.Run.Name, Mode: rr.Run.OracleMode, Parse: rr.Run.ParseMode, S: string(s)})
	}
	return ix
}

// Item detail, compact: texts are deduplicated per item (the same
// question is sent to every model) and turns are arrays.
type itemDetail struct {
	Key    string       `json:"key"`
	Texts  []string     `json:"texts"`
	Images [][]string   `json:"images"` // per turn id T1..T9 (index 0..8)
	Runs   []*runDetail `json:"runs"`   // per run of the index; null when absent
}

type runDetail struct {
	Status string   `json:"status"`
	Error  *string  `json:"error"`
	Turns  [][]any  `json:"turns"` // one array per turn, in the order below
	Events []string `json:"events"`
}

// A turn array in the detail files holds, in this order (the item
// browser's script reads them by position): turn, step, status, text,
// raw, parsed, gt, correct, patched_at, original_raw, fed_back, rule,
// skip, reasoning, jaccard.

func (t *textTable) id(s *string) any {
	if s == nil {
		return nil
	}
	if i, ok := t.m[*s]; ok {
		return i
	}
	t.m[*s] = len(t.list)
	t.list = append(t.list, *s)
	return len(t.list) - 1
}

type textTable struct {
	m    map[string]int
	list []string
}

// safeImage returns the image path (relative to the benchmark dir) if it
// stays inside the item's image folder, else "".
func safeImage(key, rel string) string {
	dir := benchmark.RecordDir(key)
	rest, ok := strings.CutPrefix(rel, dir+"/")
	if !ok {
		return ""
	}
	p, err := benchmark.SafeRelPath(dir, rest)
	if err != nil || p != path.Clean(rel) {
		return ""
	}
	return p
}

func buildDetail(it *item) *itemDetail {
	d := &itemDetail{Key: it.key, Images: make([][]string, benchmark.NumQuestions)}
	tt := &textTable{m: map[string]int{}}
	for _, r := range it.recs {
		if r == nil {
			d.Runs = append(d.Runs, nil)
			continue
		}
		rd := &runDetail{Status: r.Status, Error: r.Error, Turns: [][]any{}, Events: []string{}}
		for i := range r.Turns {
			t := &r.Turns[i]
			q, known := benchmark.QuestionOfTurn(t.Turn)
			if ti := int(q); known && d.Images[ti] == nil && len(t.Images) > 0 {
				var imgs []string
				for _, im := range t.Images {
					if p := safeImage(it.key, im); p != "" {
						imgs = append(imgs, p)
					}
				}
				d.Images[ti] = imgs
			}
			var parsed, gt any
			if t.Parsed != nil {
				parsed = *t.Parsed
			}
			if t.GT != nil {
				gt = *t.GT
			}
			var fed any
			if t.FedBack != nil && (t.Raw == nil || *t.FedBack != *t.Raw) {
				fed = tt.id(t.FedBack)
			}
			var jac any
			if t.Jaccard != nil {
				jac = *t.Jaccard
			}
			rd.Turns = append(rd.Turns, []any{t.Turn, t.Step, t.Status, tt.id(t.UserText), tt.id(t.Raw), parsed, gt, t.Correct,
				t.PatchedAt, tt.id(t.OriginalRaw), fed, t.ParseRule, t.SkipReason, tt.id(t.Reasoning), jac})
		}
		for _, e := range r.OracleEvents {
			s := fmt.Sprintf("%s triggered: %s", e.Point, e.Action)
			if !e.Triggered {
				s = e.Point + ": not triggered"
			} else if len(e.PatchedTurns) > 0 {
				s += " " + strings.Join(e.PatchedTurns, ",")
			}
			if e.NoopReason != nil {
				s += " (no-op: " + *e.NoopReason + ")"
			}
			rd.Events = append(rd.Events, s)
		}
		d.Runs = append(d.Runs, rd)
	}
	d.Texts = tt.list
	if d.Texts == nil {
		d.Texts = []string{}
	}
	return d
}

// ChunkSize is the number of items per sidecar file: one file per item
// would mean thousands of tiny files, which cost more to write than to
// load; a chunk of 16 items stays small enough to load at a click.
const ChunkSize = 16

// chunkJS is the sidecar script of chunk c (items c·ChunkSize …).
func chunkJS(c int, ds []*itemDetail) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "CHX.chunk(%d,", c)
	enc := json.NewEncoder(&b) // escapes <, >, & and U+2028/9: safe inside a script
	if err := enc.Encode(ds); err != nil {
		return nil, err
	}
	b.Truncate(b.Len() - 1)
	b.WriteString(");\n")
	return b.Bytes(), nil
}

// DataFile is the sidecar file (relative to REPORT_DIR) holding item i.
func DataFile(i int) string { return fmt.Sprintf("data/c%d.js", i/ChunkSize) }

// detailJobs returns one job per sidecar chunk file.
func detailJobs(j *job.Job, dir string, items []*item) ([]func() error, error) {
	if _, err := outdir.MkdirAll(dir, "data"); err != nil {
		return nil, err
	}
	n := (len(items) + ChunkSize - 1) / ChunkSize
	jobs := make([]func() error, n)
	for c := range jobs {
		jobs[c] = func() error {
			lo, hi := c*ChunkSize, min(len(items), (c+1)*ChunkSize)
			ds := make([]*itemDetail, 0, hi-lo)
			for _, it := range items[lo:hi] {
				ds = append(ds, buildDetail(it))
			}
			data, err := chunkJS(c, ds)
			if err != nil {
				return err
			}
			return outdir.WriteFile(j, dir, DataFile(lo), data)
		}
	}
	return jobs, nil
}
