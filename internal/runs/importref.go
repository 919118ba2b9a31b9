package runs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/protocol"
	"github.com/chexpercept/chexpercept/internal/protocol/parse"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/rundir"
	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// Importing a reference all_results.json (spec protocol.md §9.3) into our
// run format. The file keeps, per record, the conversation as sent
// (chat_history: user text, images, fed-back text and, for a turn the
// implicit oracle patched, its original reply) plus per-stage summaries.
// We rebuild each record by replaying the recorded replies through our
// own protocol engine on our copy of the benchmark: it re-derives which
// turns are asked, the parse of every reply (rule and all), correctness,
// oracle decisions and stages, exactly as a run of ours would. What was
// actually sent and fed back is then taken from chat_history, and every
// disagreement between the file and the replay is reported.
//
// Not recoverable from the file: timing (latency, attempts, started and
// finished times), finish reasons, separately returned reasoning, cache
// hits, per-turn usage when token_usage.per_call does not have one entry
// per asked turn, and records the reference dropped (absent from the file).

// MaxReferenceBytes bounds the all_results.json ImportReference reads (a
// released-size export is tens of megabytes).
const MaxReferenceBytes = rundir.MaxAllResultsBytes

// ImportOptions configure ImportReference.
type ImportOptions struct {
	Bench      *benchmark.Benchmark // the benchmark the reference run used
	Model      runmodel.Model       // the run's model, resolved through the registry
	Out        string               // results folder; the run goes to Out/<run name>/oracle_<mode>/
	NoThinking bool
	Oracle     protocol.OracleMode
	Parse      parse.Mode
	Force      bool             // replace an existing run
	Now        func() time.Time // record and manifest times; nil means time.Now
	Job        *job.Job         // the command's job: its temporary files and commit point (nil: none)
}

// ImportReport says what an import did.
type ImportReport struct {
	Dir     string // the run directory written
	RunName string
	Records int // records imported (status ok, benchmark order)
	// FileModelID is the file's token_usage.model_id when it differs from
	// the model's id; the manifest and export record it instead.
	FileModelID string
	Warnings    []string // disagreements between the file and the replay, aggregated
}

// ImportReference reads a reference all_results.json, rebuilds our
// records from it and writes them as the run directory
// Out/<run name>/oracle_<mode>/ with every file of a run. The manifest is
// the one a run of the model would have, with the prompt profile, image
// transport, endpoints and call policy unknown and imported_from naming
// the file. It stops with ctx's error once ctx ends (checked at every
// record) before it writes.
func ImportReference(ctx context.Context, file string, opts ImportOptions) (*ImportReport, error) {
	runName := results.RunName(opts.Model.Provider, opts.Model.Label, opts.NoThinking, opts.Parse == parse.ModeStrict)
	if err := results.CheckRunName(runName); err != nil {
		return nil, err
	}
	dir := rundir.Path(opts.Out, runName, string(opts.Oracle), nil)
	if err := CheckTarget(dir, opts.Force); err != nil {
		return nil, err
	}
	// With Force the target's files are replaced: the reference file
	// must not be one of them.
	for _, name := range []string{rundir.AllResultsFile, rundir.ResultsFile, rundir.ManifestFile, rundir.SummaryFile} {
		if _, same := outdir.SameFile(filepath.Join(dir, name), file); same {
			return nil, fmt.Errorf("%s is the %s of the run directory %s that the import would write; copy it elsewhere first", file, name, dir)
		}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	at := now().UTC() // one time for every record and the manifest
	ro := replayOptions{BenchDir: opts.Bench.Dir, Model: opts.Model, Oracle: opts.Oracle, Parse: opts.Parse,
		Now: func() time.Time { return at }}
	recs, modelID, warnings, err := importRecords(ctx, file, opts.Bench, &ro)
	if err != nil {
		return nil, err
	}
	rep := &ImportReport{Dir: dir, RunName: runName, Records: len(recs), Warnings: warnings}
	if modelID != "" && modelID != ro.Model.ModelID {
		rep.FileModelID, ro.Model.ModelID = modelID, modelID
	}
	benchAbs, err := filepath.Abs(opts.Bench.Dir)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = r.KeyID
	}
	m := results.NewManifest(results.RunSpec{Model: ro.Model, NoThinking: opts.NoThinking, Oracle: string(opts.Oracle),
		Parse: string(opts.Parse), Now: ro.Now}, opts.Bench, benchAbs, keys)
	m.PromptProfile = results.ProfileInfo{Name: "unknown (imported)", Texts: []string{}}
	m.ImageEncoding = results.ImageEncoding{Format: "png", Transport: "unknown (imported)"}
	m.ImportedFrom, _ = filepath.Abs(file)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := WriteRun(opts.Job, dir, m, recs, len(recs), 0); err != nil {
		return nil, err
	}
	return rep, nil
}

// warnings aggregates repeated disagreements: one line per kind with a
// count and the first few places.
type warnings struct {
	kinds []string
	count map[string]int
	where map[string][]string
}

func (w *warnings) add(kind, where string) {
	if w.count == nil {
		w.count, w.where = map[string]int{}, map[string][]string{}
	}
	if w.count[kind] == 0 {
		w.kinds = append(w.kinds, kind)
	}
	w.count[kind]++
	if len(w.where[kind]) < 3 {
		w.where[kind] = append(w.where[kind], where)
	}
}

func (w *warnings) list() []string {
	var out []string
	for _, k := range w.kinds {
		more := ""
		if w.count[k] > len(w.where[k]) {
			more = ", …"
		}
		out = append(out, fmt.Sprintf("%s: %d time(s) (%s%s)", k, w.count[k], strings.Join(w.where[k], ", "), more))
	}
	return out
}

type histEntry struct {
	text     string
	images   []string // relative to the benchmark directory
	fedBack  string
	original *string
}

// importRecords rebuilds the records of a reference all_results.json
// (file names it in messages) with the settings of o. modelID is the
// token_usage.model_id seen in the file, "" if none.
func importRecords(ctx context.Context, file string, bench *benchmark.Benchmark, o *replayOptions) (recs []*results.Record, modelID string, warns []string, err error) {
	position := make(map[string]int, len(bench.Records))
	for i, r := range bench.Records {
		position[r.KeyID] = i
	}
	var warn warnings
	seen := map[string]bool{}
	err = rundir.ScanAllResults(file, func(key string, v *ojson.Value) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		at := func(format string, args ...any) error {
			return fmt.Errorf("%s: key %q: %s", file, key, textsafe.OneLine(fmt.Sprintf(format, args...)))
		}
		if seen[key] {
			return at("appears twice")
		}
		seen[key] = true
		if k := v.Kind; k != ojson.KindObject {
			return at("the value is a %s, not an object", k)
		}
		idx, ok := position[key]
		if !ok {
			return at("not in the benchmark %s", bench.Dir)
		}
		e := &entry{key: key, v: v, index: idx, rec: bench.Records[idx], at: at}
		rec, id, err := e.importRecord(o, &warn)
		if err != nil {
			return err
		}
		if id != "" {
			modelID = id
		}
		recs = append(recs, rec)
		return nil
	})
	var notObject *ojson.NotObjectError
	var syntax *ojson.SyntaxError
	switch {
	case errors.As(err, &notObject):
		return nil, "", nil, fmt.Errorf("%s: the top level is a %s, not an object keyed by key_id", file, notObject.Kind)
	case errors.As(err, &syntax), errors.Is(err, ojson.ErrMemberTooLarge):
		return nil, "", nil, fmt.Errorf("%s: %w", file, err)
	case err != nil:
		return nil, "", nil, err
	}
	slices.SortStableFunc(recs, func(a, b *results.Record) int { return a.Index - b.Index })
	return recs, modelID, warn.list(), nil
}

// entry is one record of the file.
type entry struct {
	key   string
	v     *ojson.Value
	index int // in the benchmark
	rec   *benchmark.Record
	at    func(format string, args ...any) error // an error naming the file and the key
}

// importRecord checks the entry against the benchmark, replays its
// replies and takes what was sent and fed back from its chat_history.
func (e *entry) importRecord(o *replayOptions, warn *warnings) (*results.Record, string, error) {
	hist, perCall, modelID, err := e.read(warn)
	if err != nil {
		return nil, "", err
	}
	calls := 0
	var replayErr error
	rec := replay(e.rec, e.index, o, func(k int, t replayTurn) (protocol.Reply, error) {
		calls++
		if k >= len(hist) {
			replayErr = e.at("chat_history has %d turn(s) but the benchmark path asks more (turn text %q)", len(hist), textsafe.Clip(textsafe.OneLine(t.planned), 40))
			return protocol.Reply{}, replayErr
		}
		compareTurn(warn, fmt.Sprintf("%s chat_history[%d]", e.key, k), hist[k], t)
		h := hist[k]
		// Timing, attempts and finish reason are unknown for a replayed
		// answer and stay zero/null.
		reply := protocol.Reply{Text: h.fedBack}
		if h.original != nil {
			reply.Text = *h.original
		}
		if perCall != nil {
			reply.Usage = perCall[k].use
			c := perCall[k].cost
			reply.CostUSD = &c
		}
		return reply, nil
	})
	if replayErr != nil {
		return nil, "", replayErr
	}
	if rec.Status != results.StatusOK {
		return nil, "", e.at("replay failed: %s", deref(rec.Error))
	}
	if calls != len(hist) {
		return nil, "", e.at("chat_history has %d turn(s) but the benchmark path asks %d", len(hist), calls)
	}
	applyHistory(warn, e.key, rec, hist)
	compareStages(warn, e.key, e.v, results.ExportRecord(rec, "", ""))
	return rec, modelID, nil
}

// read checks the entry's key_id and path and reads its chat_history and
// usage.
func (e *entry) read(warn *warnings) (hist []histEntry, perCall []callUsage, modelID string, err error) {
	v := e.v
	if k := v.Get("key_id"); k != nil && (k.Kind != ojson.KindString || k.S != e.key) {
		return nil, nil, "", e.at("key_id member is %s, not the record's key", showJSON(k))
	}
	if p := v.Get("qa_path"); p == nil || p.Kind != ojson.KindString {
		return nil, nil, "", e.at("qa_path is missing or not a string")
	} else if p.S != string(e.rec.Path()) {
		return nil, nil, "", e.at("qa_path is %q but the benchmark record's path is %q", p.S, e.rec.Path())
	}
	if hist, err = readHistory(v.Get("chat_history"), e.key); err != nil {
		return nil, nil, "", e.at("%v", err)
	}
	if perCall, modelID, err = readUsage(v.Get("token_usage")); err != nil {
		return nil, nil, "", e.at("token_usage: %v", err)
	}
	if perCall != nil && len(perCall) != len(hist) {
		warn.add("token_usage.per_call does not have one entry per chat_history turn; per-turn usage dropped", e.key)
		perCall = nil
	}
	return hist, perCall, modelID, nil
}

// compareTurn reports where the file's turn differs from what our engine
// is about to send.
func compareTurn(warn *warnings, where string, h histEntry, t replayTurn) {
	switch {
	case h.text == t.userText:
	case h.text == t.planned:
		if t.userText != t.planned {
			warn.add("our engine injected an oracle text that the file's turn lacks (the parse disagrees)", where)
		}
	case strings.HasSuffix(h.text, "\n\n"+t.planned):
		if t.userText == t.planned {
			warn.add("the file's turn carries an oracle text our engine did not inject (the parse disagrees)", where)
		}
	default:
		warn.add("user text differs from the benchmark question (other prompts or another benchmark version)", where)
	}
	if !slices.Equal(h.images, t.images) {
		warn.add("images differ from the benchmark turn's", where)
	}
}

// applyHistory sets what was sent and fed back to the file's.
func applyHistory(warn *warnings, key string, rec *results.Record, hist []histEntry) {
	k := 0
	for i := range rec.Turns {
		t := &rec.Turns[i]
		if t.Status != results.TurnAsked {
			continue
		}
		h := hist[k]
		where := fmt.Sprintf("%s chat_history[%d]", key, k)
		k++
		text := h.text
		t.UserText = &text
		t.Images = slices.Clone(h.images)
		fb := h.fedBack
		t.FedBack = &fb
		switch {
		case h.original != nil && t.OriginalRaw == nil:
			warn.add("the file shows an implicit-oracle patch our engine did not make (the parse disagrees)", where)
			o := *h.original
			t.OriginalRaw = &o
		case h.original == nil && t.OriginalRaw != nil:
			warn.add("our engine patched a turn the file shows unpatched (the parse disagrees)", where)
			t.OriginalRaw, t.PatchedAt = nil, nil
		}
	}
}

// replayTurn is what the engine is about to send for one call.
type replayTurn struct {
	userText string   // the text as our engine composed it (with any explicit-oracle prefix)
	planned  string   // the turn's text without any oracle prefix
	images   []string // relative to the benchmark directory
}

// replayOptions are the settings records are replayed under.
type replayOptions struct {
	BenchDir string
	Model    runmodel.Model
	Oracle   protocol.OracleMode
	Parse    parse.Mode
	Now      func() time.Time
}

// replay runs one benchmark record through the protocol engine with the
// settings of o, answering call k (0-based) with answer; an error from
// answer ends the record with status error.
func replay(rec *benchmark.Record, index int, o *replayOptions, answer func(k int, t replayTurn) (protocol.Reply, error)) *results.Record {
	popts := protocol.Options{BenchDir: o.BenchDir, Index: index, Oracle: o.Oracle, Parse: o.Parse,
		GLMBoxUnwrap: o.Model.GLMBoxUnwrap, Now: o.Now}
	plan, err := protocol.Plan(rec, o.BenchDir)
	if err != nil {
		return protocol.ErrorRecord(rec, popts, err)
	}
	var asked []protocol.PlannedTurn
	for _, p := range plan {
		if p.Asked() {
			asked = append(asked, p)
		}
	}
	k := 0
	call := func(_ context.Context, msgs []protocol.Message) (protocol.Reply, error) {
		if k >= len(asked) {
			return protocol.Reply{}, errors.New("more calls than asked turns")
		}
		last := msgs[len(msgs)-1]
		rep, err := answer(k, replayTurn{userText: last.Text, planned: asked[k].Text, images: last.ImagePaths})
		k++
		return rep, err
	}
	return protocol.Run(context.Background(), rec, popts, call)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// readHistory checks and converts chat_history.
func readHistory(v *ojson.Value, key string) ([]histEntry, error) {
	if v == nil {
		return nil, fmt.Errorf("chat_history is missing")
	}
	if v.Kind != ojson.KindArray {
		return nil, fmt.Errorf("chat_history is a %s, not an array", v.Kind)
	}
	var out []histEntry
	for i, e := range v.A {
		if e.Kind != ojson.KindArray || len(e.A) < 3 || len(e.A) > 4 {
			return nil, fmt.Errorf("chat_history[%d]: want [user_text, [image paths], fed_back(, original)]", i)
		}
		for _, j := range []int{0, 2, 3} {
			if j < len(e.A) && e.A[j].Kind != ojson.KindString {
				return nil, fmt.Errorf("chat_history[%d][%d] is a %s, not a string", i, j, e.A[j].Kind)
			}
		}
		if e.A[1].Kind != ojson.KindArray {
			return nil, fmt.Errorf("chat_history[%d][1] is a %s, not an array of image paths", i, e.A[1].Kind)
		}
		h := histEntry{text: e.A[0].S, fedBack: e.A[2].S, images: []string{}}
		if len(e.A) == 4 {
			o := e.A[3].S
			h.original = &o
		}
		for j, p := range e.A[1].A {
			if p.Kind != ojson.KindString {
				return nil, fmt.Errorf("chat_history[%d][1][%d] is a %s, not a string", i, j, p.Kind)
			}
			rel, err := relImage(p.S, key)
			if err != nil {
				return nil, fmt.Errorf("chat_history[%d][1][%d]: %w", i, j, err)
			}
			h.images = append(h.images, rel)
		}
		out = append(out, h)
	}
	return out, nil
}

// relImage turns an absolute image path of the reference's machine,
// <benchmark dir>/chexpercept/<key_id>/<file>, into our relative form
// chexpercept/<key_id>/<file>. The part after the key folder must stay
// inside it.
func relImage(p, key string) (string, error) {
	s := strings.ReplaceAll(p, `\`, "/")
	marker := "chexpercept/" + key + "/"
	i := strings.LastIndex(s, marker)
	if i < 0 || (i > 0 && s[i-1] != '/') {
		return "", fmt.Errorf("image path %q is not under chexpercept/%s/", p, key)
	}
	rest := s[i+len(marker):]
	if rest == "" || strings.HasPrefix(rest, "/") {
		return "", fmt.Errorf("image path %q names no file inside chexpercept/%s/", p, key)
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("image path %q leaves its record folder", p)
		}
	}
	return marker + rest, nil
}

type callUsage struct {
	use  *results.TokenUse
	cost float64
}

// readUsage reads token_usage: per_call entries and model_id. A missing
// block gives nil.
func readUsage(v *ojson.Value) ([]callUsage, string, error) {
	if v == nil {
		return nil, "", nil
	}
	if v.Kind != ojson.KindObject {
		return nil, "", fmt.Errorf("a %s, not an object", v.Kind)
	}
	modelID := ""
	if m := v.Get("model_id"); m != nil && m.Kind == ojson.KindString {
		modelID = m.S
	}
	pc := v.Get("per_call")
	if pc == nil || pc.Kind != ojson.KindArray {
		return nil, modelID, fmt.Errorf("per_call is missing or not an array")
	}
	out := []callUsage{}
	for i, e := range pc.A {
		num := func(name string) (int64, error) {
			x := e.Get(name)
			if x == nil {
				return 0, nil
			}
			n, ok := ojson.IntLiteral(x)
			if !ok {
				return 0, fmt.Errorf("per_call[%d].%s is %s, not an integer", i, name, showJSON(x))
			}
			return int64(n), nil
		}
		var u results.TokenUse
		var err error
		for _, f := range []struct {
			name string
			dst  *int64
		}{{"input_tokens", &u.InputTokens}, {"cached_input_tokens", &u.CachedInputTokens}, {"output_tokens", &u.OutputTokens},
			{"thinking_tokens", &u.ThinkingTokens}, {"total_tokens", &u.TotalTokens}} {
			if *f.dst, err = num(f.name); err != nil {
				return nil, modelID, err
			}
		}
		cost := 0.0
		if c := e.Get("cost_usd"); c != nil {
			if c.Kind != ojson.KindNumber {
				return nil, modelID, fmt.Errorf("per_call[%d].cost_usd is %s, not a number", i, showJSON(c))
			}
			if _, err := fmt.Sscan(c.N, &cost); err != nil {
				return nil, modelID, fmt.Errorf("per_call[%d].cost_usd: %w", i, err)
			}
		}
		out = append(out, callUsage{use: &u, cost: cost})
	}
	return out, modelID, nil
}

// compareStages reports where the file's stage objects (responses,
// ground truth, correctness) disagree with the replay's export.
func compareStages(w *warnings, key string, file, ours *ojson.Value) {
	for _, s := range []string{"detection_qa", "contour_evaluation_qa", "contour_revision_qa", "attribute_extraction_qa"} {
		a, b := file.Get(s), ours.Get(s)
		for _, part := range []string{"response", "responses", "ground_truth", "correct"} {
			var av, bv *ojson.Value
			if a != nil {
				av = a.Get(part)
			}
			if b != nil {
				bv = b.Get(part)
			}
			if av == nil && bv == nil {
				continue
			}
			if av == nil || bv == nil || string(ojson.MarshalCompact(av)) != string(ojson.MarshalCompact(bv)) {
				kind := map[string]string{
					"response": "the file's parsed response differs from our re-parse", "responses": "the file's parsed response differs from our re-parse",
					"ground_truth": "the file's ground truth differs from the benchmark", "correct": "the file's correctness differs from our re-scoring",
				}[part]
				w.add(kind, key+" "+s)
			}
		}
	}
	if a, b := file.Get("_chat_history_idx"), ours.Get("_chat_history_idx"); (a == nil) != (b == nil) ||
		(a != nil && string(ojson.MarshalCompact(a)) != string(ojson.MarshalCompact(b))) {
		w.add("the file's _chat_history_idx differs from the replay's", key)
	}
}
