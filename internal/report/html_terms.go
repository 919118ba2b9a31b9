package report

import (
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
)

// The words of index.html, defined where they appear: a sentence under
// each table says what its numbers are, each plot has a caption sentence,
// and the item browser explains its marks (report.js). report.md keeps
// its own shorter text.

// Definitions shared by several notes.
const (
	defE2E     = "End-to-end accuracy: the share of records answered correctly at this stage and at every applicable stage before it, the way a reader who stops at the first mistake would count."
	defOP      = "Oracle-passed accuracy: the share of records answered correctly at this stage alone, whatever happened before (in implicit and explicit runs the oracle has corrected earlier mistakes)."
	defCond    = "Conditional accuracy: of the records answered correctly up to the previous applicable stage, the share also right at this one."
	defDepth   = "Depth: how many stages in a row, from stage 1, a record was answered correctly (a heart-type record, whose lesion has no stage 4, that is right at every stage gets one extra), averaged over records; the maximum is 4 on revision_required, 3 on revision_free and 1 on lesion_free."
	defStages  = "Stages: 1 detection, 2 contour evaluation, 3 contour revision, 4 attributes."
	defCells   = "Cells give the percentage with its 95 % interval; N/A marks a stage that does not apply or a cell without records."
	defChance  = "The rows chance (uniform guessing) and majority (always the most frequent answer of each question type) come from the benchmark alone."
	defN       = "n: the records of the path; a stage counts only the records it applies to, and a heart-type lesion (in the built-in set, the enlarged heart) has no stage 4, so stage 4 of revision_required and revision_free is over n minus its records (n = 7 with one heart-type record: stage 4 is over 6)."
	defJaccard = "Jaccard: for a multi-select question, the overlap of the chosen and the right options, |chosen ∩ right| / |chosen ∪ right|, averaged (exact match is still what counts as correct)."
)

// tableNotes map the start of a table title to its note, first match wins.
var tableNotes = []struct{ prefix, note string }{
	{"Leaderboard", "One row per run. " + defDepth + " E2E: end-to-end accuracy at the last stage of the path, that is the share of records answered correctly at every stage. Parse: how answers were read (reference: the reference implementation's lenient rules; strict: only an explicit \"Answer: N\" counts). Sampling: see the Sampling table below, one row per run."},
	{"Readers and models on the readers' records", "One reader study's readers (one arm), each in a row of their own, and below them the models, each on the records every reader of the study answered (a reader study reads a sample; the leaderboard above ranks the models on all their records). E2E: end-to-end accuracy at the last stage of the path, the share of those records answered correctly at every stage, with its Wilson 95 % interval; Records: how many records each column counts (RR, RF, LF: revision_required, revision_free, lesion_free). The readers-and-models part compares them by MRMC analysis."},
	{"Sampling", "The generation settings each run sent (temperature, top_p, token limit, …), as its manifest records them; N/A without a manifest."},
	{"Benchmarks", "The benchmark each run was made on, by its identity: the SHA-256 of the benchmark's SHA256SUMS (which lists the SHA-256 of chexpercept.json and of every image), or of chexpercept.json for a benchmark without one, as the run's manifest records it; the first 12 digits here, in full in summary.json. unknown: a run made before identities were recorded. Runs of different benchmarks are set side by side only with --allow-mixed-benchmarks, and then every table says so."},
	{"Servers", "Who answered each run: the model entry the server listed when eval asked it before the first call (its preflight; owned_by, root and max_model_len for vLLM, version for Gemini, policy for chexpercept's baseline server). A run answered by chexpercept's stand-in (serve-baseline, the simulated models included) is marked " + analysis.RehearsalNote + ": it rehearses the command of a real run, its numbers are the stand-in's. N/A: the manifest records no server (older runs, imports, human readers)."},
	{"End-to-end accuracy (%) by lesion", defE2E + " " + defStages + " " + defCells},
	{"End-to-end accuracy", defE2E + " " + defStages + " " + defCells + " " + defDepth + " " + defN},
	{"Oracle-passed accuracy", defOP + " " + defStages + " " + defCells + " " + defN},
	{"Conditional accuracy", defCond + " " + defStages + " " + defCells + " " + defN},
	{"Depth by lesion", defDepth + " The interval is a bootstrap 95 % interval."},
	{"Contour revision sub-questions", "Each question of stage 3 on its own: expansion and contraction (which coloured points the mask must grow toward or shrink at; multi-select, right only when exactly the right set is chosen) and revision result (which of the mask images is the corrected one). " + defJaccard + " " + defChance},
	{"Attribute sub-questions", "Each question of stage 4 on its own: distribution (how many lung zones), location (which regions; multi-select), severity (what share of the lung) and comparison (left against right lung). " + defJaccard + " " + defChance},
	{"Detection", "Detection: is the lesion there (yes/no). Contour evaluation: does the overlaid mask need a major revision (yes/no). " + defChance},
	{"Parse failures", "A parse failure is an answer from which no option number could be read (reference mode: none of the rules A4 to A6 found an answer; strict mode: no \"Answer: N\" marker, a number out of range, or several numbers for a single choice). Out of range: a number that is no option. Empty: the model returned no text. Truncated: the reply stopped at the token limit. Errors: records whose calls failed even after retries."},
	{"Usage", "Tokens and cost as the API reported them (thinking tokens are part of the output); cost is N/A for an unpriced model. Latency: the median and 95th percentile time of one call."},
	{"Paired differences", "A − B on the records both runs answered, with a paired bootstrap 95 % interval; an interval that excludes 0 means the difference is unlikely to be noise."},
	{"Domain groups", "Each model's end-to-end accuracy averaged within its domain group (general, medical, …); the interval resamples both the models and the records."},
	{"Medical − general", "The medical group's mean minus the general group's, in percentage points, with its interval; above 0 favours the medical models."},
	{"Matched pairs", "Each medical model against the general model it was built on, on the same records: b counts records where the medical model is right and its base wrong, c the opposite."},
	{"Image control", "One model's end-to-end accuracy with the image (its run) and without it (its control run: text-only sends no image, blank-radiograph draws the masks and points over a uniform grey), on the same records. Difference: with − without, in points, with a paired bootstrap 95 % interval; McNemar p tests it on the records whose outcome changed. A stage whose accuracy drops reliably (interval above 0 and p ≤ 0.05) uses the image; any other the model answers as well without it. Surviving: of the right answers with the image, the share still right without it."},
	{"Above the no-image level", "For each model with a control run: how many points of its end-to-end accuracy at each path and stage are above what it scores without the image, on the same records, with a paired 95 % interval; \"drop\" marks a reliable drop (interval above 0 and McNemar p ≤ 0.05): a stage that uses the image. A stage without it the model answers as well without the image."},
	{"Depth decay", "End-to-end accuracy at each stage and its ratio to stage 1: how much of the stage-1 accuracy survives the later stages; \"drop\" marks a stage where most of it is lost at once."},
}

// tableNote is the note of the table titled title, "" when none applies.
func tableNote(title string) string {
	for _, n := range tableNotes {
		if strings.HasPrefix(title, n.prefix) {
			return n.note
		}
	}
	return ""
}

// plotCaption is the sentence under a plot, from its file name
// (PlotName); runs are the report's runs, to name a per-run plot's run.
func plotCaption(name string, runs []*analysis.RunResult) string {
	rest, ok := strings.CutPrefix(name, "plot_")
	if !ok {
		return name
	}
	for _, k := range []struct{ kind, text string }{
		{"stage_accuracy", "End-to-end accuracy of each model, one bar per applicable stage, in one panel per path (revision_required, revision_free, lesion_free), with Wilson 95 % intervals"},
		{"contour_revision_detail", "Accuracy of the three contour-revision questions (expansion points, contraction points, revision result) on revision_required records, per model"},
		{"attribute_extraction_detail", "Accuracy of the four attribute questions (distribution, location, severity, comparison) on revision_required and revision_free records together, per model"},
		{"depth_heatmap", "Mean depth of each model on each path, coloured by its share of the path's maximum; each cell shows the mean and the maximum"},
		{"lesion_stage", "End-to-end accuracy (%) of one run by lesion (rows) and by path and stage (columns)"},
		{"domain_groups", "Mean end-to-end accuracy of each domain group (general, medical, …) at each path and stage, with two-level bootstrap 95 % intervals"},
	} {
		tail, ok := strings.CutPrefix(rest, k.kind+"_oracle_")
		if !ok {
			continue
		}
		mode, run, _ := strings.Cut(tail, "_")
		s := k.text
		if run != "" {
			for _, rr := range runs {
				if PlotName(k.kind, mode, rr.Run.Name) == name {
					run = rr.Run.Name
					break
				}
			}
			s += ": " + run
		}
		if k.kind != "depth_heatmap" && k.kind != "lesion_stage" {
			s += "; a bar at 0 % is drawn as a thin bar"
		}
		return s + " (oracle mode " + mode + ")."
	}
	return name
}
