package report

import (
	"fmt"
	"strings"
)

// glossaryTerm is one term of the report's glossary: index.html lists
// them in <dl id="glossary">, each <dt> with the anchor "g-"+ID, and
// report.md in its "Glossary" section. Headings and notes that use a
// term link to its anchor.
type glossaryTerm struct {
	ID, Term, Def string
}

// glossary is every term and code of the report, in reading order.
var glossary = []glossaryTerm{
	{"oracle-mode", "Oracle mode", "How a run treated the model's earlier mistakes inside one conversation. Each mode has its own section of tables; runs of different modes are never ranked together."},
	{"oracle-none", "oracle none", "No oracle: every turn follows the model's own earlier answers, right or wrong."},
	{"oracle-implicit", "oracle implicit", "Before a stage, the oracle checks the earlier answers it depends on (decision points D2, D3, D5, D6); when one is wrong it silently rewrites that answer in the conversation history to the right one (a patch), so the model continues as if it had answered correctly."},
	{"oracle-explicit", "oracle explicit", "As implicit, but instead of rewriting the history the oracle tells the model the right answer in the next question (an inject)."},
	{"error-policy", "Error policy", "How a record whose calls failed even after retries is counted: exclude leaves it out of every accuracy (its n shrinks), wrong counts it as answered wrongly at every stage. The Errors column counts such records."},
	{"paths", "RR, RF, LF (paths)", "revision_required (RR): the overlaid mask needs a major revision, stages 1–4; revision_free (RF): the mask is right, stages 1, 2 and 4; lesion_free (LF): there is no lesion, stage 1 only."},
	{"stages", "Stages 1–4", "1 detection (T1), 2 contour evaluation (T2), 3 contour revision (T3 expansion points, T4 contraction points, T5 revision result), 4 attributes (T6 distribution, T7 location, T8 severity, T9 comparison)."},
	{"stage-n", "n and the per-stage counts", "n is the number of records on the path. A stage counts only the records it applies to: a heart-type lesion (its mask is the whole heart outline; in the built-in set, the enlarged heart) has no attribute questions, so it has no stage 4, and stage 4 counts n minus its records: with n = 7 and one heart-type record, stage 4 is over 6 records. For a heart-type lesion alone the stage-4 cell is N/A."},
	{"turns", "T1–T9", "The nine turns (questions) of one record's conversation, in order; see Stages 1–4."},
	{"e2e", "E2E (end-to-end accuracy)", defE2E},
	{"oracle-passed", "Oracle-passed accuracy", defOP},
	{"conditional", "Conditional accuracy", defCond},
	{"depth", "Depth", defDepth},
	{"decision-points", "D2, D3, D5, D6 (oracle decision points)", "The oracle's checks before T2 (was detection right?), T3 (was contour evaluation right?), T5 (were the expansion and contraction points right?) and T6 (was the mask judged right?). \"oracle D2 triggered: patch T1\" in the item browser means the check before T2 failed and the oracle rewrote T1's answer (patch, implicit mode) or told the model (inject, explicit mode)."},
	{"parse-modes", "Parse: reference, strict", "How option numbers were read from a reply. reference: the reference implementation's lenient rules; strict: only an explicit \"Answer: N\" marker counts."},
	{"parse-rules", "Parse rules A4, A5, A6, A7, B0, B1, B2, B3", "The reference parse reads a reply in two layers and the item browser shows which rule of each fired, as \"rule A4/B2\". First layer: A4 an \"Answer: N\" marker (the last one), A5 a \"final answer\" phrase, A6 a reply made only of numbers, A7 no marker, so the whole prose went on. Second layer: B0 an empty reply, B1 an \"answer is N\" phrase, B2 the last line made only of numbers, B3 every number in the text. Strict parse rules are named in words (answer_marker, boxed, fail:no_marker, …)."},
	{"chance", "chance, majority", "Rows computed from the benchmark alone: chance is uniform guessing, majority always the most frequent answer of each question type."},
	{"rehearsal", "Rehearsal", "A run answered by chexpercept's stand-in server (serve-baseline): it rehearses the command of a real run and its numbers are the stand-in's, not a model's."},
	{"item-health", "Item-health flags (⚑)", "Items whose answers across runs suggest a problem with the item itself, for example unanimous_wrong: every model gave the same answer and it is not the ground truth. Each flag names its turn (T1–T9) and the rule that raised it."},
	{"sampling", "Sampling", "The generation settings (temperature, top_p, token limit, …) a run sent, as its manifest records them; shown per run in the Sampling table of each oracle mode."},
}

// oracleModeID is the glossary anchor of an oracle mode, "oracle-mode"
// for a mode the glossary does not define.
func oracleModeID(mode string) string {
	for _, g := range glossary {
		if g.ID == "oracle-"+mode {
			return g.ID
		}
	}
	return "oracle-mode"
}

// glossaryMarkdown is report.md's glossary section.
func glossaryMarkdown(b *strings.Builder) {
	b.WriteString("\n## Glossary\n\n")
	for _, g := range glossary {
		fmt.Fprintf(b, "- **%s**: %s\n", g.Term, g.Def)
	}
}
