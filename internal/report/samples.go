package report

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/pycsv"
	"github.com/chexpercept/chexpercept/internal/results"
)

// The flat per-turn files: one row per run × record × turn of
// results.jsonl (asked, skipped or error), so that pandas, spreadsheets
// and dataset tools need no json_normalize. docs/samples.md documents
// the columns.
const (
	SamplesCSV     = "samples.csv"
	SamplesParquet = "samples.parquet"
	// samplesSchema is the Parquet key-value metadata entry that names
	// the column set, so that a later change of columns can be told.
	samplesSchema = "chexpercept/samples/4"
)

// sample is one row. Pointer fields are null (Parquet optional, CSV NA)
// when the turn has no such value, e.g. every reply field of a skipped
// turn. Answer sets are ";"-joined strings (see answerSet).
type sample struct {
	Run          string   `parquet:"run,dict"`
	Provider     string   `parquet:"provider,dict"`
	Model        *string  `parquet:"model,optional,dict"`
	OracleMode   string   `parquet:"oracle_mode,dict"`
	ParseMode    string   `parquet:"parse_mode,dict"`
	KeyID        string   `parquet:"key_id,dict"`
	RecordIndex  int64    `parquet:"record_index"`
	RecordStatus string   `parquet:"record_status,dict"`
	Lesion       string   `parquet:"lesion,dict"`
	Path         string   `parquet:"path,dict"`
	Stage        *int32   `parquet:"stage,optional"`
	Question     *string  `parquet:"question,optional,dict"`
	MultiSelect  *bool    `parquet:"multi_select,optional"`
	Turn         string   `parquet:"turn,dict"`
	TurnIndex    int32    `parquet:"turn_index"`
	Status       string   `parquet:"status,dict"`
	SkipReason   *string  `parquet:"skip_reason,optional,dict"`
	GT           *string  `parquet:"gt,optional,dict"`
	Parsed       *string  `parquet:"parsed,optional,dict"`
	Correct      *bool    `parquet:"correct,optional"`
	Jaccard      *float64 `parquet:"jaccard,optional"`
	ParseOutcome *string  `parquet:"parse_outcome,optional,dict"`
	ParseRule    *string  `parquet:"parse_rule,optional,dict"`
	FinishReason *string  `parquet:"finish_reason,optional,dict"`
	PatchedAt    *string  `parquet:"patched_at,optional,dict"`
	Cached       *bool    `parquet:"cached,optional"`
	Attempts     int32    `parquet:"attempts"`
	LatencyMS    *int64   `parquet:"latency_ms,optional"`
	TotalMS      *int64   `parquet:"total_ms,optional"`
	InputTokens  *int64   `parquet:"input_tokens,optional"`
	CachedInput  *int64   `parquet:"cached_input_tokens,optional"`
	OutputTokens *int64   `parquet:"output_tokens,optional"`
	Thinking     *int64   `parquet:"thinking_tokens,optional"`
	CostUSD      *float64 `parquet:"cost_usd,optional"`
	Error        *string  `parquet:"error,optional"`
	Server       *string  `parquet:"server,optional,dict"`
	// A reader's run (provider human) names its reader study, the reader
	// and the arm (analysis.Run.ReaderOf); null for every other run, and
	// the study also for a reader's run exported before studies were
	// named.
	Study  *string `parquet:"study,optional,dict"`
	Reader *string `parquet:"reader,optional,dict"`
	Arm    *string `parquet:"arm,optional,dict"`
}

// samplesHeader is the CSV header: the Parquet column names, in order.
var samplesHeader = func() []string {
	var h []string
	for _, f := range parquet.SchemaOf(sample{}).Fields() {
		h = append(h, f.Name())
	}
	return h
}()

// Parse outcomes of an asked turn (column parse_outcome). "empty" and
// "fail" together are the n_parse_fail of ext_parse.csv.
const (
	outcomeOK         = "ok"
	outcomeEmpty      = "empty"        // the reply was empty
	outcomeFail       = "fail"         // any other parse failure (§10.3)
	outcomeOutOfRange = "out_of_range" // parsed, but a number is not an option
)

// samplesPerGroup bounds the rows a Parquet row group (held in memory
// until flushed) collects; 14 runs × 2,100 records give about three.
const samplesPerGroup = 1 << 16

// writeSamples writes samples.csv and samples.parquet into dir, row by
// row: runs in the analysis's order (run name, then oracle mode), records
// by key_id (byte order), turns in conversation order. Once ctx ends
// (checked at every run) neither file is written and the error is ctx's.
func writeSamples(ctx context.Context, j *job.Job, res *analysis.Result, dir, version string) error {
	csvFile, err := outdir.Create(j, dir, SamplesCSV)
	if err != nil {
		return err
	}
	defer csvFile.Abort()
	pqFile, err := outdir.Create(j, dir, SamplesParquet)
	if err != nil {
		return err
	}
	defer pqFile.Abort()

	cw := bufio.NewWriterSize(csvFile, 1<<16)
	cw.Write(pycsv.Rows(samplesHeader))
	createdBy := "chexpercept"
	if version != "" {
		createdBy += " version " + version
	}
	pbuf := bufio.NewWriterSize(pqFile, 1<<16)
	pw := parquet.NewGenericWriter[sample](pbuf,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(samplesPerGroup),
		parquet.KeyValueMetadata("chexpercept.schema", samplesSchema),
		&parquet.WriterConfig{CreatedBy: createdBy})

	batch := make([]sample, 0, 1024)
	fields := make([]string, 0, len(samplesHeader))
	flush := func() error {
		_, err := pw.Write(batch)
		batch = batch[:0]
		return err
	}
	for _, rr := range res.Runs {
		if err := ctx.Err(); err != nil {
			return err
		}
		recs := slices.SortedFunc(slices.Values(rr.Run.Records), func(a, b *results.Record) int {
			return cmp.Compare(a.KeyID, b.KeyID)
		})
		for _, rec := range recs {
			for i := range rec.Turns {
				s := sampleOf(rr.Run, rec, i)
				fields = s.csvFields(fields[:0])
				cw.Write(pycsv.Rows(fields))
				if batch = append(batch, s); len(batch) == cap(batch) {
					if err := flush(); err != nil {
						return fmt.Errorf("write %s: %w", filepath.Join(dir, SamplesParquet), err)
					}
				}
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, SamplesParquet), err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, SamplesParquet), err)
	}
	if err := pbuf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, SamplesParquet), err)
	}
	if err := cw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, SamplesCSV), err)
	}
	if err := csvFile.Commit(); err != nil {
		return err
	}
	return pqFile.Commit()
}

// sampleOf is the row of turn i of rec in run.
func sampleOf(run *analysis.Run, rec *results.Record, i int) sample {
	t := &rec.Turns[i]
	s := sample{
		Run: run.Name, Provider: run.Provider, OracleMode: run.OracleMode, ParseMode: run.ParseMode,
		KeyID: rec.KeyID, RecordIndex: int64(rec.Index), RecordStatus: rec.Status, Lesion: rec.Lesion, Path: string(rec.QAPath),
		Turn: t.Turn, TurnIndex: int32(i), Status: t.Status, SkipReason: t.SkipReason,
		GT: answerSet(t.GT), Error: t.Error, Attempts: int32(t.Attempts),
	}
	if run.Model != "" { // "" without a manifest
		s.Model = &run.Model
	}
	if run.Server != "" {
		server := run.Server
		if run.Kind == results.KindRehearsal {
			server += " (" + analysis.RehearsalNote + ")"
		}
		s.Server = &server
	}
	if a, ok := run.ReaderOf(); ok {
		reader, arm := a.Reader, a.Arm
		s.Reader, s.Arm = &reader, &arm
		if a.Study != "" {
			study := a.Study
			s.Study = &study
		}
	}
	if q, ok := benchmark.QuestionOfStep(t.Step); ok {
		stage, name, multi := int32(q.Stage()), q.Name(), q.Multi()
		s.Stage, s.Question, s.MultiSelect = &stage, &name, &multi
	}
	if t.Status == results.TurnError {
		// A failed call still took its attempts and its time.
		total := t.TotalMS
		s.TotalMS = &total
	}
	if t.Status != results.TurnAsked {
		return s
	}
	s.Parsed, s.Correct, s.Jaccard = answerSet(t.Parsed), t.Correct, t.Jaccard
	outcome := parseOutcome(t)
	s.ParseOutcome, s.ParseRule, s.FinishReason, s.PatchedAt = &outcome, t.ParseRule, t.FinishReason, t.PatchedAt
	cached, lat, total := t.Cached, t.LatencyMS, t.TotalMS
	s.Cached, s.LatencyMS, s.TotalMS = &cached, &lat, &total
	if u := t.Usage; u != nil {
		in, ci, out, th := u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.ThinkingTokens
		s.InputTokens, s.CachedInput, s.OutputTokens, s.Thinking = &in, &ci, &out, &th
	}
	s.CostUSD = t.CostUSD
	return s
}

// answerSet joins answer indices with ";" in their stored order ("1;3");
// nil for no list or an empty one (an asked turn from which no number
// was parsed: parse_outcome tells why). A string rather than a Parquet
// list keeps one representation in both files, and a string column can
// be grouped and counted in pandas, which list cells cannot; ";" keeps
// CSV cells unquoted and unlike the canonical "1,3" of parsed_text.
func answerSet(xs *[]int) *string {
	if xs == nil || len(*xs) == 0 {
		return nil
	}
	var b strings.Builder
	for i, x := range *xs {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(strconv.Itoa(x))
	}
	s := b.String()
	return &s
}

// parseOutcome classifies an asked turn: an empty reply, another parse
// failure (analysis.IsParseFailure, as ext_parse.csv counts them), a
// parsed answer outside the options, or ok.
func parseOutcome(t *results.Turn) string {
	switch {
	case t.Raw != nil && *t.Raw == "":
		return outcomeEmpty
	case analysis.IsParseFailure(t):
		return outcomeFail
	case t.InRange != nil && !*t.InRange:
		return outcomeOutOfRange
	}
	return outcomeOK
}

// csvFields appends s's CSV cells to dst: NA for null, true/false,
// integers in decimal, jaccard with 6 decimals like our other fractions,
// cost_usd in the shortest exact decimal (a per-call cost can be far
// below 10⁻⁶).
func (s *sample) csvFields(dst []string) []string {
	str := func(p *string) string {
		if p == nil {
			return NA
		}
		return *p
	}
	b := func(p *bool) string {
		if p == nil {
			return NA
		}
		return boolStr(*p)
	}
	i64 := func(p *int64) string {
		if p == nil {
			return NA
		}
		return strconv.FormatInt(*p, 10)
	}
	i32 := func(p *int32) string {
		if p == nil {
			return NA
		}
		return strconv.Itoa(int(*p))
	}
	f := func(p *float64, prec int) string {
		if p == nil || math.IsNaN(*p) {
			return NA
		}
		return strconv.FormatFloat(*p, 'f', prec, 64)
	}
	return append(dst, s.Run, s.Provider, str(s.Model), s.OracleMode, s.ParseMode,
		s.KeyID, strconv.FormatInt(s.RecordIndex, 10), s.RecordStatus, s.Lesion, s.Path,
		i32(s.Stage), str(s.Question), b(s.MultiSelect), s.Turn, strconv.Itoa(int(s.TurnIndex)),
		s.Status, str(s.SkipReason), str(s.GT), str(s.Parsed), b(s.Correct), f(s.Jaccard, 6),
		str(s.ParseOutcome), str(s.ParseRule), str(s.FinishReason), str(s.PatchedAt),
		b(s.Cached), strconv.Itoa(int(s.Attempts)), i64(s.LatencyMS), i64(s.TotalMS),
		i64(s.InputTokens), i64(s.CachedInput), i64(s.OutputTokens), i64(s.Thinking),
		f(s.CostUSD, -1), str(s.Error), str(s.Server), str(s.Study), str(s.Reader), str(s.Arm))
}
