// Package parse turns a model's raw reply into option numbers, in the two
// modes of spec protocol.md §7.
//
// Reference mode reproduces the reference evaluator's two regex layers so
// that scores stay comparable with the paper: layer A (A0–A7) extracts a
// string from the raw output and layer B (B0–B3) reduces that string to a
// comma-separated number list, which is then converted to ints with −1 as
// the "no number" sentinel. Strict mode accepts only an explicit answer
// marker or a \boxed{} answer and records every other reply as a failure.
//
// The reference relies on Python's regex semantics: \d is any Unicode
// decimal digit (valued by its position in its run of ten), \s is Python's
// whitespace set (wider than Go's), and \w covers Unicode letters and
// digits. The patterns below spell those classes out for RE2; none of the
// rules needs a lookaround.
package parse

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Mode is a parse mode: "reference" or "strict".
type Mode string

const (
	ModeReference Mode = "reference"
	ModeStrict    Mode = "strict"
)

// ParseMode validates a --parse-mode value.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeReference, ModeStrict:
		return Mode(s), nil
	}
	return "", &modeError{s}
}

type modeError struct{ s string }

func (e *modeError) Error() string {
	return "unknown parse mode " + strconv.Quote(e.s) + " (want reference or strict)"
}

// Result is the parse of one reply.
type Result struct {
	// Text is the layer-A string in reference mode, or the canonical
	// comma-joined answer in strict mode ("" on failure).
	Text string
	// Nums is the parsed int list. Reference mode always yields at least
	// one element (−1 when no number was found); strict mode yields the
	// deduplicated numbers, or none when no answer was found.
	Nums []int
	// Rule names what fired: "A4/B2" in reference mode; "answer_marker",
	// "boxed" or "fail:<reason>" in strict mode.
	Rule string
	// OK: reference layer A ended at A4, A5 or A6; strict: no failure.
	OK bool
	// InRange: Nums is non-empty and every number lies in 1..n_options.
	InRange bool
}

// Python's str.isspace() set, as the body of a character class.
const ws = `\t\n\x0B\f\r\x1C-\x1F \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

// numList is D+ (WS* , WS* D+)*, the number list shared by several rules.
const numList = `\p{Nd}+(?:[` + ws + `]*,[` + ws + `]*\p{Nd}+)*`

var (
	reGLMBox   = regexp.MustCompile(`(?s)<\|begin_of_box\|>(.*?)<\|end_of_box\|>`)
	reThink    = regexp.MustCompile(`(?s)<think>.*?</think>`)
	reUnused   = regexp.MustCompile(`<unused\p{Nd}+>`)
	reBoxed    = regexp.MustCompile(`\\boxed\{([\p{Nd},` + ws + `]+)\}`)
	reA4       = regexp.MustCompile(`[Aa]nswer[` + ws + `]*:[` + ws + `]*\(?(` + numList + `)\)?`)
	reA5       = regexp.MustCompile(`(?i)final answer[^\p{L}\p{N}_][^$\p{Nd}]*\$*[` + ws + `]*(` + numList + `)`)
	reA6       = regexp.MustCompile(`^[\p{Nd},.` + ws + `]*$`)
	reB1       = regexp.MustCompile(`(?i)answers?[` + ws + `]*(?:is|are)[` + ws + `]*[:\-]?[` + ws + `]*(\p{Nd}[\p{Nd},` + ws + `]*)`)
	reDigitRun = regexp.MustCompile(`\p{Nd}+`)
	reLineNums = regexp.MustCompile(`^[\p{Nd},` + ws + `]*$`)
	reSigned   = regexp.MustCompile(`-?\p{Nd}+`)
	reMarker   = regexp.MustCompile(`(?i)answers?[` + ws + `*_]*[:：][` + ws + `*_]*\(?[` + ws + `]*(` + numList + `)[` + ws + `]*\)?`)
)

// isWS reports membership in Python's whitespace set.
func isWS(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r >= 0x1C && r <= 0x1F, r == ' ', r == 0x85, r == 0xA0,
		r == 0x1680, r >= 0x2000 && r <= 0x200A, r == 0x2028, r == 0x2029, r == 0x202F,
		r == 0x205F, r == 0x3000:
		return true
	}
	return false
}

// strip is Python's str.strip() with no argument.
func strip(s string) string { return strings.TrimFunc(s, isWS) }

// digitValue is the value of a Unicode decimal digit: its offset in its
// run of ten. Nd characters come in contiguous runs of ten starting at a
// zero, possibly back to back (the mathematical digits), so the offset from
// the start of the contiguous block, modulo ten, is the value.
func digitValue(r rune) int {
	start := r
	for start > 0 && unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return int(r-start) % 10
}

// join joins the digit runs of s with ",", keeping the original characters.
func join(s string) string { return strings.Join(reDigitRun.FindAllString(s, -1), ",") }

const maxInt32 = 2147483647

// toInt converts an optional '-' and a run of Unicode digits, clamping
// the magnitude to 2^31−1 (Python's int is unbounded; such values can
// never equal an option anyway).
func toInt(s string) int {
	neg := strings.HasPrefix(s, "-")
	v := 0
	for _, r := range strings.TrimPrefix(s, "-") {
		v = v*10 + digitValue(r)
		if v > maxInt32 {
			v = maxInt32
		}
	}
	if neg {
		return -v
	}
	return v
}

// Convert is the reference conversion of a layer-B string: each
// comma-separated piece becomes its first signed integer, or −1.
func Convert(b string) []int {
	pieces := strings.Split(b, ",")
	out := make([]int, len(pieces))
	for i, p := range pieces {
		m := reSigned.FindString(p)
		if m == "" {
			out[i] = -1
			continue
		}
		out[i] = toInt(m)
	}
	return out
}

func inRange(nums []int, n int) bool {
	if len(nums) == 0 {
		return false
	}
	for _, v := range nums {
		if v < 1 || v > n {
			return false
		}
	}
	return true
}

// LayerA applies rules A0–A7 and returns the layer-A string and the rule
// it ended at (A4…A7).
func LayerA(raw string, glmUnwrap bool) (string, string) {
	t := raw
	if glmUnwrap {
		t = reGLMBox.ReplaceAllString(t, "${1}")
	}
	t = reThink.ReplaceAllString(t, "")
	t = reUnused.ReplaceAllString(t, "")
	t = reBoxed.ReplaceAllString(t, "${1}")
	if ms := reA4.FindAllStringSubmatch(t, -1); len(ms) > 0 {
		return join(ms[len(ms)-1][1]), "A4"
	}
	if m := reA5.FindStringSubmatch(t); m != nil {
		return join(m[1]), "A5"
	}
	st := strip(t)
	if reA6.MatchString(st) && reDigitRun.MatchString(st) {
		return join(st), "A6"
	}
	return st, "A7"
}

// LayerB applies rules B0–B3 to a layer-A string.
func LayerB(s string) (string, string) {
	if s == "" {
		return "-1", "B0"
	}
	t := strip(s)
	t = reThink.ReplaceAllString(t, "")
	t = reUnused.ReplaceAllString(t, "")
	if m := reB1.FindStringSubmatch(t); m != nil {
		return join(m[1]), "B1"
	}
	lines := strings.Split(t, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strip(lines[i])
		if l == "" {
			continue
		}
		if reLineNums.MatchString(l) && reDigitRun.MatchString(l) {
			return join(l), "B2"
		}
	}
	if j := join(t); j != "" {
		return j, "B3"
	}
	return "-1", "B3"
}

// Reference parses raw in reference mode. nOptions only feeds InRange.
func Reference(raw string, nOptions int, glmUnwrap bool) Result {
	a, ruleA := LayerA(raw, glmUnwrap)
	b, ruleB := LayerB(a)
	nums := Convert(b)
	return Result{
		Text:    a,
		Nums:    nums,
		Rule:    ruleA + "/" + ruleB,
		OK:      ruleA == "A4" || ruleA == "A5" || ruleA == "A6",
		InRange: inRange(nums, nOptions),
	}
}

// Strict failure reasons (parse_rule "fail:<reason>").
const (
	FailEmpty    = "fail:empty_response"
	FailNoMarker = "fail:no_marker"
	FailRange    = "fail:out_of_range"
	FailMultiple = "fail:multiple_for_single"
)

// strictPreprocess is step 1 of §7.2 and returns t0.
func strictPreprocess(raw string) string {
	t := reGLMBox.ReplaceAllString(raw, "${1}")
	t = reThink.ReplaceAllString(t, "")
	// An orphan </think>: everything before it was reasoning.
	if i := strings.LastIndex(t, "</think>"); i >= 0 {
		t = t[i+len("</think>"):]
	}
	// An unclosed <think>: the reply was cut inside its reasoning.
	if i := strings.Index(t, "<think>"); i >= 0 {
		t = t[:i]
	}
	return reUnused.ReplaceAllString(t, "")
}

// Strict parses raw in strict mode for a question with nOptions options;
// multi marks a multi-select question.
func Strict(raw string, nOptions int, multi bool) Result {
	if strip(raw) == "" {
		return Result{Rule: FailEmpty}
	}
	t0 := strictPreprocess(raw)
	t1 := reBoxed.ReplaceAllString(t0, "${1}")
	var group, rule string
	if ms := reMarker.FindAllStringSubmatch(t1, -1); len(ms) > 0 {
		group, rule = ms[len(ms)-1][1], "answer_marker"
	} else if ms := reBoxed.FindAllStringSubmatch(t0, -1); len(ms) > 0 {
		group, rule = ms[len(ms)-1][1], "boxed"
	} else {
		return Result{Rule: FailNoMarker}
	}
	var nums []int
	seen := map[int]bool{}
	for _, run := range reDigitRun.FindAllString(group, -1) {
		v := toInt(run)
		if !seen[v] {
			seen[v] = true
			nums = append(nums, v)
		}
	}
	if len(nums) == 0 {
		// A boxed group of only commas and spaces holds no answer.
		return Result{Rule: FailNoMarker}
	}
	res := Result{Nums: nums, InRange: inRange(nums, nOptions)}
	switch {
	case !res.InRange:
		res.Rule = FailRange
	case !multi && len(nums) > 1:
		res.Rule = FailMultiple
	default:
		res.Rule, res.OK, res.Text = rule, true, Canonical(nums)
	}
	return res
}

// FormatAnswer is the one answer text: "Answer: " and the option numbers,
// ascending and each once, comma-joined ("Answer: 1,3"). The baselines
// and the simulated model reply with it, the implicit oracle feeds it
// back, a reader's choice is stored as it, and a dry run sizes replies by
// it.
func FormatAnswer(nums []int) string { return "Answer: " + Canonical(OptionSet(nums)) }

// OptionSet is nums ascending with each number once (a new slice).
func OptionSet(nums []int) []int {
	s := slices.Clone(nums)
	slices.Sort(s)
	return slices.Compact(s)
}

// Canonical writes nums as ASCII decimal joined by ",".
func Canonical(nums []int) string {
	parts := make([]string, len(nums))
	for i, v := range nums {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// Parse dispatches on mode.
func Parse(mode Mode, raw string, nOptions int, multi, glmUnwrap bool) Result {
	if mode == ModeStrict {
		return Strict(raw, nOptions, multi)
	}
	return Reference(raw, nOptions, glmUnwrap)
}
