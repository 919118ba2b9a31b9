package validate

import (
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/render"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// sink collects findings.
type sink struct{ f []Finding }

func (s *sink) add(sev Severity, code, key, loc, format string, args ...any) {
	f := Finding{Severity: sev, Code: code, KeyID: key, Location: loc, Message: textsafe.OneLine(fmt.Sprintf(format, args...))}
	for _, a := range args {
		if err, ok := a.(error); ok && safefile.Transient(err) {
			f.transient = err
		}
	}
	s.f = append(s.f, f)
}

// optInfo is what the file checks need of one revision option.
type optInfo struct {
	file string // the option's file name when it is safe and matches P, else ""
	typ  string
}

// recInfo is one record as seen by the JSON checks, handed to the file
// checks.
type recInfo struct {
	key       string
	json      sink
	counted   bool // usable key, first occurrence: counted and file-checked
	skipFiles bool // the record is too broken to say which files it needs
	// contourUnknown: a positive record without a readable contour_qa;
	// only its detection image can be checked.
	contourUnknown bool
	lesion         string
	path           benchmark.Path
	heart          bool   // a heart-type positive (no attribute stage)
	ceRel          string // contour-eval image relative to the record dir, "" if unusable
	options        []optInfo
}

// maskNamePattern lists the mask-name forms of format.md §3.3.
var maskNamePattern = regexp.MustCompile(`^(optimal_component_[0-9]+|optimal_combined_mask|suboptimal_component_[0-9]+(_(exp[0-9]+|cont[0-9]+|no_expansion|no_contraction)(_fake_(expansion|contraction)_[0-9]+)?)?|default_(keep|dilated|eroded)|default_(right|left)_lung_(chex|cxas))$`)

// checkJSON reads and checks chexpercept.json (§8.1–8.4 path rules).
func checkJSON(root string, top *sink, rep *Report) []*recInfo {
	name := filepath.Join(root, benchmark.JSONName)
	fi, err := os.Lstat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		top.add(Error, "missing_file", "", benchmark.JSONName, "chexpercept.json is absent")
		return nil
	case err != nil:
		top.add(Error, "missing_file", "", benchmark.JSONName, "cannot stat chexpercept.json: %v", err)
		return nil
	case fi.Mode()&os.ModeSymlink != 0:
		top.add(Error, "symlink", "", benchmark.JSONName, "chexpercept.json is a symbolic link; it is not followed")
		return nil
	case !fi.Mode().IsRegular():
		top.add(Error, "missing_file", "", benchmark.JSONName, "chexpercept.json is not a regular file")
		return nil
	}
	data, err := benchdir.ReadJSONFile(root)
	if err != nil {
		top.add(Error, "invalid_json", "", benchmark.JSONName, "%v", err)
		return nil
	}
	rep.SHA256 = benchmark.SHA256Hex(data)
	return checkData(data, top, rep.Lesions)
}

// checkData checks the bytes of chexpercept.json against the benchmark's
// lesion set (nil = the built-in seven).
func checkData(data []byte, top *sink, lesions *benchmark.LesionSet) []*recInfo {
	v, err := ojson.Parse(data)
	if err != nil {
		var se *ojson.SyntaxError
		if errors.As(err, &se) {
			top.add(Error, "invalid_json", "", benchmark.JSONName, "line %d, column %d: %s", se.Line, se.Col, se.Msg)
		} else {
			top.add(Error, "invalid_json", "", benchmark.JSONName, "%v", err)
		}
		return nil
	}
	if v.Kind != ojson.KindObject {
		top.add(Error, "not_object", "", "/", "the top level is %s, not an object of records", ojson.KindName(v))
		return nil
	}
	dupAt := map[string][]ojson.Duplicate{}
	for _, d := range ojson.Duplicates(v) {
		if d.Pointer == "" {
			continue // a repeated key_id; reported record by record below
		}
		k := unescapeToken(strings.SplitN(d.Pointer[1:], "/", 2)[0])
		dupAt[k] = append(dupAt[k], d)
	}
	if len(v.O) == 0 {
		top.add(Error, "empty_benchmark", "", "/", "chexpercept.json holds no records")
		return nil
	}
	recs := make([]*recInfo, 0, len(v.O))
	seen := make(map[string]bool, len(v.O))
	dicoms := make(map[string]string)
	for _, m := range v.O {
		r := &recInfo{key: m.Key}
		ptr := "/" + ojson.EscapePointer(m.Key)
		if seen[m.Key] {
			r.json.add(Error, "duplicate_key", m.Key, ptr, "key_id occurs more than once; only the first is checked against the files")
		} else {
			for _, d := range dupAt[m.Key] {
				r.json.add(Error, "duplicate_key", m.Key, d.Pointer+"/"+ojson.EscapePointer(d.Key), "member %q occurs more than once in the same object", d.Key)
			}
		}
		c := &checker{s: &r.json, key: m.Key, r: r, lesions: lesions}
		c.record(ptr, m.Value, !seen[m.Key], dicoms)
		seen[m.Key] = true
		recs = append(recs, r)
	}
	return recs
}

func unescapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
}

// checker checks one record's JSON.
type checker struct {
	s       *sink
	key     string
	r       *recInfo
	lesions *benchmark.LesionSet
}

func (c *checker) add(sev Severity, code, loc, format string, args ...any) {
	c.s.add(sev, code, c.key, loc, format, args...)
}

// obj is an object under check; it remembers which members were looked at
// so unknown ones can be reported.
type obj struct {
	c     *checker
	ptr   string
	v     *ojson.Value
	known []string
}

func (c *checker) object(v *ojson.Value, ptr, what string) *obj {
	if v == nil || v.Kind != ojson.KindObject {
		c.add(Error, "not_object", ptr, "%s is %s, not an object", what, ojson.KindName(v))
		return nil
	}
	return &obj{c: c, ptr: ptr, v: v}
}

func (o *obj) loc(key string) string { return o.ptr + "/" + ojson.EscapePointer(key) }

// member returns the member or reports missing_field when it is absent.
func (o *obj) member(key string) *ojson.Value {
	o.known = append(o.known, key)
	m := o.v.Get(key)
	if m == nil {
		o.c.add(Error, "missing_field", o.loc(key), "required field %q is absent", key)
	}
	return m
}

func (o *obj) mismatch(key, want string, got *ojson.Value) {
	o.c.add(Error, "type_mismatch", o.loc(key), "expected %s, found %s", want, describe(got))
}

func describe(v *ojson.Value) string {
	if v != nil && v.Kind == ojson.KindNumber {
		return "the number " + v.N
	}
	return ojson.KindName(v)
}

func (o *obj) str(key string) (string, bool) {
	m := o.member(key)
	if m == nil {
		return "", false
	}
	if m.Kind != ojson.KindString {
		o.mismatch(key, "a string", m)
		return "", false
	}
	return m.S, true
}

func (o *obj) boolean(key string) (bool, bool) {
	m := o.member(key)
	if m == nil {
		return false, false
	}
	if m.Kind != ojson.KindBool {
		o.mismatch(key, "a boolean", m)
		return false, false
	}
	return m.B, true
}

func (o *obj) integer(key string) (int, bool) {
	m := o.member(key)
	if m == nil {
		return 0, false
	}
	n, ok := ojson.IntLiteral(m)
	if !ok {
		want := "an integer"
		if m.Kind == ojson.KindArray {
			want = "an integer (single choice), not a list"
		}
		o.mismatch(key, want, m)
	}
	return n, ok
}

func (o *obj) number(key string) (*big.Float, bool) {
	m := o.member(key)
	if m == nil {
		return nil, false
	}
	if m.Kind != ojson.KindNumber {
		o.mismatch(key, "a number", m)
		return nil, false
	}
	f, _, err := big.ParseFloat(m.N, 10, 64, big.ToNearestEven)
	if err != nil {
		o.mismatch(key, "a number", m)
		return nil, false
	}
	return f, true
}

func (o *obj) strList(key string) ([]string, bool) {
	m := o.member(key)
	if m == nil {
		return nil, false
	}
	return o.c.strListValue(m, o.loc(key))
}

func (c *checker) strListValue(m *ojson.Value, loc string) ([]string, bool) {
	if m.Kind != ojson.KindArray {
		c.add(Error, "type_mismatch", loc, "expected a list of strings, found %s", describe(m))
		return nil, false
	}
	out := make([]string, 0, len(m.A))
	ok := true
	for i, e := range m.A {
		if e.Kind != ojson.KindString {
			c.add(Error, "type_mismatch", loc+"/"+strconv.Itoa(i), "expected a string, found %s", describe(e))
			ok = false
			continue
		}
		out = append(out, e.S)
	}
	return out, ok
}

func (o *obj) intList(key string) ([]int, bool) {
	m := o.member(key)
	if m == nil {
		return nil, false
	}
	if m.Kind != ojson.KindArray {
		want := "a list of integers"
		if key == "answer_index" {
			want = "a list of integers (multi-select), not a single value"
		}
		o.mismatch(key, want, m)
		return nil, false
	}
	out := make([]int, 0, len(m.A))
	ok := true
	for i, e := range m.A {
		n, good := ojson.IntLiteral(e)
		if !good {
			o.c.add(Error, "type_mismatch", o.loc(key)+"/"+strconv.Itoa(i), "expected an integer, found %s", describe(e))
			ok = false
		}
		out = append(out, n)
	}
	return out, ok
}

// sub returns a required sub-object.
func (o *obj) sub(key string) *obj {
	m := o.member(key)
	if m == nil {
		return nil
	}
	return o.c.object(m, o.loc(key), strconv.Quote(key))
}

// unknown reports members not looked at or listed in extra.
func (o *obj) unknown(extra ...string) {
	known := append(o.known, extra...)
	for _, m := range o.v.O {
		if !slices.Contains(known, m.Key) {
			o.c.add(Warning, "unknown_field", o.loc(m.Key), "field %q is not defined by the format", m.Key)
		}
	}
}

// record checks one record: its key, the detection answer that decides
// its path (§5), its ids, then the fields of that path.
func (c *checker) record(ptr string, v *ojson.Value, first bool, dicoms map[string]string) {
	r := c.r
	lesion := benchmark.LesionOf(c.key)
	keyPair, keyOK := c.recordKey(ptr, lesion)
	r.lesion = lesion
	// A usable key claims its folder even when the record is broken, so
	// the folder is not also reported as an orphan.
	r.counted = keyOK && first
	r.path = benchmark.LesionFree
	if keyOK && strings.Contains(keyPair, "_positive_") {
		r.path = benchmark.RevisionRequired
	}
	o := c.object(v, ptr, "the record")
	if o == nil {
		r.skipFiles = true
		return
	}
	positive := c.detection(o, keyPair, keyOK)
	pair, pairOK := o.str("pair_id")
	if pairOK && keyOK && pair != keyPair {
		c.add(Error, "pair_id_mismatch", o.loc("pair_id"), "pair_id %q differs from the key without its lesion, %q", pair, keyPair)
	}
	mimicPair := keyPair
	if !keyOK {
		mimicPair = pair
	}
	c.dicomID(o, mimicPair, first, dicoms)

	r.path = benchmark.LesionFree
	r.heart = positive && c.lesions.IsHeart(lesion)
	if !positive {
		for _, k := range []string{"contour_qa", "attribute_extraction_qa"} {
			if o.v.Get(k) != nil {
				c.add(Warning, "unexpected_field", o.loc(k), "lesion-free record has %q; it is ignored", k)
			}
		}
		o.unknown("contour_qa", "attribute_extraction_qa", "revision_sequential_qa")
		return
	}
	r.path = benchmark.RevisionRequired
	if co := o.sub("contour_qa"); co != nil {
		if nd := c.contour(co); nd {
			r.path = benchmark.RevisionFree
		}
	} else {
		r.contourUnknown = true
	}
	c.attributeField(o)
	o.unknown("revision_sequential_qa")
}

// recordKey checks the record's key_id and returns its pair id; ok is
// false when the key is unusable.
func (c *checker) recordKey(ptr, lesion string) (pair string, ok bool) {
	if !c.lesions.Has(lesion) {
		why := "is not one of the 7 lesions, and the benchmark declares no others (" + benchmark.LesionsFileName + ")"
		if c.lesions != nil && !c.lesions.IsDefault() {
			why = "is not a lesion the benchmark declares in " + benchmark.LesionsFileName
		}
		c.add(Error, "unknown_lesion", ptr, "key prefix %q %s", textsafe.OneLine(lesion), why)
		return "", false
	}
	_, p, err := c.lesions.ParseKeyID(c.key)
	if err != nil {
		c.add(Error, "bad_key_id", ptr, "key does not match <lesion>_<stem>_(positive|negative)_<n>")
		return "", false
	}
	return p, true
}

// detection checks detection_qa and says whether the record is positive
// (§5): the path follows detection_qa.answer; only when that cannot be
// read does the key's polarity decide which fields are required.
func (c *checker) detection(o *obj, keyPair string, keyOK bool) (positive bool) {
	answer, answerOK := "", false
	if det := o.sub("detection_qa"); det != nil {
		answer, answerOK = c.yesNo(det)
		det.unknown()
	}
	positive = answer == "Yes"
	if !answerOK && keyOK {
		positive = strings.Contains(keyPair, "_positive_")
	}
	if keyOK && answerOK {
		if strings.Contains(keyPair, "_positive_") && answer == "No" {
			c.add(Warning, "polarity_mismatch", o.loc("detection_qa")+"/answer", "pair id is positive but the detection answer is \"No\"")
		} else if strings.Contains(keyPair, "_negative_") && answer == "Yes" {
			c.add(Warning, "polarity_mismatch", o.loc("detection_qa")+"/answer", "pair id is negative but the detection answer is \"Yes\"")
		}
	}
	return positive
}

// dicomID checks dicom_id: its form for MIMIC pair ids, and (for a
// record's first occurrence) that no other record uses it.
func (c *checker) dicomID(o *obj, mimicPair string, first bool, dicoms map[string]string) {
	dv := o.member("dicom_id")
	if dv == nil {
		return
	}
	switch dv.Kind {
	case ojson.KindNull:
		if benchmark.IsMIMICPairID(mimicPair) {
			c.add(Warning, "bad_dicom_id", o.loc("dicom_id"), "MIMIC record has a null dicom_id")
		}
	case ojson.KindString:
		if benchmark.IsMIMICPairID(mimicPair) && !benchmark.DicomIDPattern.MatchString(dv.S) {
			c.add(Warning, "bad_dicom_id", o.loc("dicom_id"), "dicom_id %q is not 5 groups of 8 lowercase hex digits", dv.S)
		}
		if first {
			if other, dup := dicoms[dv.S]; dup {
				c.add(Warning, "duplicate_dicom", o.loc("dicom_id"), "dicom_id %q also appears in %s", dv.S, other)
			} else {
				dicoms[dv.S] = c.key
			}
		}
	default:
		o.mismatch("dicom_id", "a string or null", dv)
	}
}

// heartAttributesCode is the finding code of a heart-type record with an
// attribute object; the format names it after the built-in heart lesion.
var heartAttributesCode = benchmark.DefaultLesions().HeartNames()[0] + "_attributes"

// attributeField checks a positive record's attribute_extraction_qa: null
// for heart-type lesions, else the attribute object.
func (c *checker) attributeField(o *obj) {
	o.known = append(o.known, "attribute_extraction_qa")
	av := o.v.Get("attribute_extraction_qa")
	switch {
	case c.r.heart && av == nil:
		c.add(Warning, "attribute_key_absent", o.loc("attribute_extraction_qa"), "%s record (heart-type) omits attribute_extraction_qa instead of writing null", c.r.lesion)
	case c.r.heart && av.Kind != ojson.KindNull:
		// The finding code keeps the name the format documents.
		c.add(Error, heartAttributesCode, o.loc("attribute_extraction_qa"), "must be null for %s (heart-type), found %s", c.r.lesion, describe(av))
	case c.r.heart:
	case av == nil:
		c.add(Error, "missing_field", o.loc("attribute_extraction_qa"), "required field \"attribute_extraction_qa\" is absent")
	case av.Kind == ojson.KindNull:
		c.add(Error, "type_mismatch", o.loc("attribute_extraction_qa"), "null is allowed only for heart-type lesions; expected an object")
	default:
		if ao := c.object(av, o.loc("attribute_extraction_qa"), "attribute_extraction_qa"); ao != nil {
			c.attributes(ao)
		}
	}
}

// yesNo checks a Yes/No question (detection, contour eval) and returns
// its answer string; ok is false when the answer is absent or not a
// string.
func (c *checker) yesNo(o *obj) (answer string, ok bool) {
	o.str("question")
	if opts, ok := o.strList("answer_options"); ok && !slices.Equal(opts, benchmark.YesNo) {
		c.add(Error, "bad_options", o.loc("answer_options"), "expected [\"Yes\", \"No\"], found %q", opts)
	}
	ans, aok := o.str("answer")
	idx, iok := o.integer("answer_index")
	if iok && (idx < 1 || idx > 2) {
		c.add(Error, "answer_index_out_of_range", o.loc("answer_index"), "index %d is outside 1..2", idx)
		iok = false
	}
	if aok && ans != "Yes" && ans != "No" {
		c.add(Error, "answer_inconsistent", o.loc("answer"), "answer %q is neither \"Yes\" nor \"No\"", ans)
	} else if aok && iok && (ans == "Yes") != (idx == 1) {
		c.add(Error, "answer_inconsistent", o.loc("answer"), "answer %q does not match answer_index %d", ans, idx)
	}
	return ans, aok
}

// contour checks contour_qa and returns no_deformation.
func (c *checker) contour(o *obj) bool {
	nd, ndOK := o.boolean("no_deformation")
	o.str("initial_context")
	if l, ok := o.strList("revision_before_masks"); ok {
		c.maskNames(l, o.loc("revision_before_masks"))
	}
	if l, ok := o.strList("revision_after_masks"); ok {
		c.maskNames(l, o.loc("revision_after_masks"))
	}
	for _, k := range []string{"true_masks", "fake_masks"} {
		if sub := o.sub(k); sub != nil {
			for _, m := range sub.v.O {
				if l, ok := c.strListValue(m.Value, sub.loc(m.Key)); ok {
					c.maskNames(l, sub.loc(m.Key))
				}
			}
		}
	}
	if tc := o.member("true_combination"); tc != nil && tc.Kind != ojson.KindNull {
		if l, ok := c.strListValue(tc, o.loc("true_combination")); ok {
			c.maskNames(l, o.loc("true_combination"))
		}
	}
	if fc := o.member("fake_combinations"); fc != nil {
		if fc.Kind != ojson.KindArray {
			o.mismatch("fake_combinations", "a list of lists of strings", fc)
		} else {
			for i, e := range fc.A {
				loc := o.loc("fake_combinations") + "/" + strconv.Itoa(i)
				if l, ok := c.strListValue(e, loc); ok {
					c.maskNames(l, loc)
				}
			}
		}
	}
	if ce := o.sub("contour_eval_qa"); ce != nil {
		ans, aok := c.yesNo(ce)
		if aok && (ans == "Yes" || ans == "No") && ndOK && (ans == "Yes") == nd {
			c.add(Error, "answer_inconsistent", ce.loc("answer"), "contour-eval answer %q contradicts no_deformation %v", ans, nd)
		}
		if rel, ok := ce.str("relative_path"); ok {
			if p, err := benchmark.SafeRelPath(benchmark.ContourDir, rel); err != nil {
				c.add(Error, "unsafe_path", ce.loc("relative_path"), "%v", err)
			} else {
				c.r.ceRel = p
			}
		}
		ce.unknown()
	}
	exp := c.pointQA(o, "contour_revision_qa_expansion")
	con := c.pointQA(o, "contour_revision_qa_contraction")
	if ev, cv := o.v.Get("contour_revision_qa_expansion"), o.v.Get("contour_revision_qa_contraction"); ev != nil && cv != nil {
		ea, ca := ev.Get("answer_options"), cv.Get("answer_options")
		if ea != nil && ca != nil && string(ojson.MarshalCompact(ea)) != string(ojson.MarshalCompact(ca)) {
			c.add(Error, "options_differ", o.loc("contour_revision_qa_contraction")+"/answer_options", "contraction options differ from the expansion options")
		}
	}
	if ndOK && !nd && exp == "None" && con == "None" {
		c.add(Warning, "rr_without_revision", o.ptr, "revision-required record whose expansion and contraction answers are both None")
	}
	c.revision(o)
	o.unknown()
	return ndOK && nd
}

func (c *checker) maskNames(names []string, loc string) {
	for i, n := range names {
		if !maskNamePattern.MatchString(n) {
			c.add(Warning, "mask_name_unrecognised", loc+"/"+strconv.Itoa(i), "mask name %q matches none of the known forms", n)
		}
	}
}

// pointQA checks an expansion or contraction object and returns its
// answer ("" when unreadable).
func (c *checker) pointQA(parent *obj, key string) string {
	o := parent.sub(key)
	if o == nil {
		return ""
	}
	o.str("question")
	var colours []string // option texts, None last; nil when the options are unusable
	m := 0
	if ao := o.member("answer_options"); ao != nil {
		colours, m = c.pointOptions(ao, o.loc("answer_options"))
	}
	ans, aok := o.str("answer")
	idx, iok := o.intList("answer_index")
	if iok && colours != nil {
		if c.multiselect(idx, m+1, o.loc("answer_index"), false) && aok {
			want := benchmark.NoneOption
			if !(len(idx) == 1 && idx[0] == m+1) {
				parts := make([]string, len(idx))
				for i, k := range idx {
					parts[i] = colours[k-1] + " point"
				}
				want = strings.Join(parts, ", ")
			}
			if ans != want {
				c.add(Error, "answer_inconsistent", o.loc("answer"), "answer %q does not match answer_index %v (expected %q)", ans, idx, want)
			}
		}
	}
	o.unknown()
	return ans
}

// pointOptions checks a point-option list; it returns the colours (with
// "None" last) and the number m of point options, or nil when the list is
// not well formed.
func (c *checker) pointOptions(ao *ojson.Value, loc string) ([]string, int) {
	if ao.Kind != ojson.KindArray {
		c.add(Error, "type_mismatch", loc, "expected a list of point options, found %s", describe(ao))
		return nil, 0
	}
	if len(ao.A) < 2 {
		c.add(Error, "bad_options", loc, "expected at least one point option and a final None option, found %d options", len(ao.A))
	}
	good := len(ao.A) >= 2
	var colours []string
	seen := map[[2]int]int{}
	for i, e := range ao.A {
		eloc := loc + "/" + strconv.Itoa(i)
		eo := c.object(e, eloc, "a point option")
		if eo == nil {
			good = false
			continue
		}
		last := i == len(ao.A)-1
		pv := eo.member("point")
		col, colOK := eo.str("color")
		eo.unknown()
		colours = append(colours, col)
		if !colOK {
			good = false
		}
		if pv == nil {
			good = false
			continue
		}
		if last {
			if pv.Kind != ojson.KindNull || (colOK && col != benchmark.NoneOption) {
				c.add(Error, "bad_options", eloc, "the final option must be {\"point\": null, \"color\": \"None\"}")
				good = false
			}
			continue
		}
		if pv.Kind == ojson.KindNull {
			c.add(Error, "bad_options", eloc+"/point", "a point option other than the last has point null")
			good = false
			continue
		}
		var xy [2]int
		if pv.Kind != ojson.KindArray || len(pv.A) != 2 {
			c.add(Error, "bad_options", eloc+"/point", "point must be [x, y] with 2 integers, found %s", compact(pv))
			good = false
			continue
		}
		okXY := true
		for j := range 2 {
			n, ok := ojson.IntLiteral(pv.A[j])
			if !ok {
				okXY = false
			}
			xy[j] = n
		}
		if !okXY {
			c.add(Error, "bad_options", eloc+"/point", "point must be [x, y] with 2 integers, found %s", compact(pv))
			good = false
			continue
		}
		if xy[0] < 0 || xy[0] > 1023 || xy[1] < 0 || xy[1] > 1023 {
			c.add(Error, "point_out_of_bounds", eloc+"/point", "point [%d, %d] lies outside 0..1023", xy[0], xy[1])
		}
		if j, dup := seen[xy]; dup {
			c.add(Warning, "duplicate_point", eloc+"/point", "point [%d, %d] repeats option %d", xy[0], xy[1], j+1)
		} else {
			seen[xy] = i
		}
		if colOK {
			if _, ok := render.PaletteColour(col); !ok {
				c.add(Error, "unknown_colour", eloc+"/color", "colour %q is not in the palette", col)
			} else if want := render.PaletteName(i + 1); col != want {
				c.add(Warning, "colour_order", eloc+"/color", "option %d has colour %q, expected %q", i+1, col, want)
			}
		}
	}
	if !good {
		return nil, 0
	}
	return colours, len(ao.A) - 1
}

func compact(v *ojson.Value) string {
	return textsafe.Clip(string(ojson.MarshalCompact(v)), 60)
}

// multiselect checks a multi-select index list over n options, the last
// being the None option. It returns whether the list is usable.
func (c *checker) multiselect(idx []int, n int, loc string, ascending bool) bool {
	ok := true
	if len(idx) == 0 {
		c.add(Error, "multiselect_invalid", loc, "empty answer list")
		return false
	}
	seen := map[int]bool{}
	for i, k := range idx {
		if k < 1 || k > n {
			c.add(Error, "answer_index_out_of_range", loc+"/"+strconv.Itoa(i), "index %d is outside 1..%d", k, n)
			ok = false
			continue
		}
		if seen[k] {
			c.add(Error, "multiselect_invalid", loc, "index %d occurs twice", k)
			ok = false
		}
		seen[k] = true
	}
	if ok && seen[n] && len(idx) > 1 {
		c.add(Error, "multiselect_invalid", loc, "the None index %d is combined with other indices", n)
		ok = false
	}
	if ok && ascending {
		for i := 1; i < len(idx); i++ {
			if idx[i] < idx[i-1] {
				c.add(Error, "multiselect_invalid", loc, "location indices %v are not ascending", idx)
				return false
			}
		}
	}
	return ok
}

func (c *checker) revision(parent *obj) {
	o := parent.sub("contour_revision_qa_revision_result")
	if o == nil {
		return
	}
	o.str("question")
	ans, aok := o.str("answer")
	idx, iok := o.integer("answer_index")
	ao := o.member("answer_options")
	o.unknown()
	if ao == nil {
		return
	}
	loc := o.loc("answer_options")
	if ao.Kind != ojson.KindArray {
		c.add(Error, "type_mismatch", loc, "expected a list of revision options, found %s", describe(ao))
		return
	}
	n := len(ao.A)
	switch {
	case n == 0 || n > 4:
		c.add(Error, "bad_options", loc, "revision result has %d options; expected 1 to 4", n)
	case n < 4:
		c.add(Warning, "few_revision_options", loc, "revision result has %d options, fewer than 4", n)
	}
	trues := 0
	truePos := 0
	c.r.options = make([]optInfo, n)
	for i, e := range ao.A {
		eloc := loc + "/" + strconv.Itoa(i)
		eo := c.object(e, eloc, "a revision option")
		if eo == nil {
			continue
		}
		typ, tok := eo.str("type")
		if tok {
			switch typ {
			case "true":
				trues++
				truePos = i + 1
			case "fake":
			default:
				c.add(Error, "revision_true_option", eloc+"/type", "type %q is neither \"true\" nor \"fake\"", typ)
			}
		}
		if masks, ok := eo.strList("masks"); ok {
			if len(masks) == 0 {
				c.add(Error, "revision_true_option", eloc+"/masks", "option has no masks")
			}
			c.maskNames(masks, eloc+"/masks")
		}
		rel, rok := eo.str("relative_path")
		eo.unknown()
		if !rok {
			continue
		}
		if _, err := benchmark.SafeRelPath(benchmark.RevisionDir, rel); err != nil {
			c.add(Error, "unsafe_path", eloc+"/relative_path", "%v", err)
			continue
		}
		mm := benchmark.OptionFilePattern.FindStringSubmatch(rel)
		if mm == nil {
			c.add(Error, "bad_option_path", eloc+"/relative_path", "%q is not a file name of the form option_<k>_mask_(answer|fake).png", rel)
			continue
		}
		c.r.options[i] = optInfo{file: rel, typ: typ}
		if mm[1] != strconv.Itoa(i+1) {
			c.add(Error, "bad_option_path", eloc+"/relative_path", "%q names option %s but is option %d", rel, mm[1], i+1)
		}
		if tok && (typ == "true" || typ == "fake") && (mm[2] == "answer") != (typ == "true") {
			c.add(Error, "bad_option_path", eloc+"/relative_path", "%q has suffix %q but the option's type is %q", rel, mm[2], typ)
		}
	}
	if trues != 1 {
		c.add(Error, "revision_true_option", loc, "%d options have type \"true\"; expected exactly one", trues)
	} else if iok && idx != truePos && idx >= 1 && idx <= n {
		c.add(Error, "revision_true_option", o.loc("answer_index"), "answer_index %d but the true option is %d", idx, truePos)
	}
	if iok && (idx < 1 || idx > n) {
		c.add(Error, "answer_index_out_of_range", o.loc("answer_index"), "index %d is outside 1..%d", idx, n)
	} else if iok && aok && ans != benchmark.OrdinalMask(idx) {
		c.add(Error, "answer_inconsistent", o.loc("answer"), "answer %q is not %q", ans, benchmark.OrdinalMask(idx))
	}
}

// single checks a single-choice attribute question: options via
// checkOpts, answer = option text at answer_index. It returns the index
// when it is usable.
func (c *checker) single(o *obj, checkOpts func([]string) string) (int, bool) {
	o.str("question")
	opts, ook := o.strList("answer_options")
	if ook {
		if msg := checkOpts(opts); msg != "" {
			c.add(Error, "bad_options", o.loc("answer_options"), "%s", msg)
		}
	}
	ans, aok := o.str("answer")
	idx, iok := o.integer("answer_index")
	if iok && ook && (idx < 1 || idx > len(opts)) {
		c.add(Error, "answer_index_out_of_range", o.loc("answer_index"), "index %d is outside 1..%d", idx, len(opts))
		return idx, false
	}
	if iok && ook && aok && ans != opts[idx-1] {
		c.add(Error, "answer_inconsistent", o.loc("answer"), "answer %q is not option %d, %q", ans, idx, opts[idx-1])
	}
	return idx, iok && ook
}

// attributes checks the attribute object: exactly the four attribute
// keys, each question well formed and its answer consistent with its
// ground-truth fields.
func (c *checker) attributes(o *obj) {
	var want []string // the attribute questions' names are their keys (format.md §3.5)
	for _, q := range benchmark.StageAttributeExtraction.Questions() {
		want = append(want, q.Name())
	}
	for _, k := range want {
		if o.v.Get(k) == nil {
			c.add(Error, "attribute_keys", o.loc(k), "attribute object lacks %q", k)
		}
	}
	for _, m := range o.v.O {
		if !slices.Contains(want, m.Key) {
			c.add(Error, "attribute_keys", o.loc(m.Key), "attribute object has unexpected key %q (expected %s)", m.Key, strings.Join(want, ", "))
		}
	}
	get := func(k string) *obj {
		v := o.v.Get(k)
		if v == nil {
			return nil
		}
		return c.object(v, o.loc(k), strconv.Quote(k))
	}
	if d := get(benchmark.QDistribution.Name()); d != nil {
		c.distribution(d)
	}
	if l := get(benchmark.QLocation.Name()); l != nil {
		c.location(l)
	}
	if s := get(benchmark.QSeverity.Name()); s != nil {
		c.severity(s)
	}
	if cm := get(benchmark.QComparison.Name()); cm != nil {
		c.comparison(cm)
	}
}

// distribution: the index follows the number of distinct answer_zones
// (4 for none or four and more).
func (c *checker) distribution(d *obj) {
	idx, ok := c.single(d, func(opts []string) string {
		if !slices.Equal(opts, benchmark.DistributionOptions) {
			return fmt.Sprintf("distribution options must be %q", benchmark.DistributionOptions)
		}
		return ""
	})
	if zones, zok := d.strList("answer_zones"); zok && ok {
		distinct := map[string]bool{}
		for _, z := range zones {
			distinct[z] = true
		}
		exp := len(distinct)
		if exp == 0 || exp >= 4 {
			exp = 4
		}
		if idx != exp {
			c.add(Warning, "attribute_gt_inconsistent", d.loc("answer_index"), "%d distinct answer_zones imply index %d, found %d", len(distinct), exp, idx)
		}
	}
	d.unknown()
}

// location: a multiselect over 4 options ending in "None"; the answer is
// the selected option texts joined.
func (c *checker) location(l *obj) {
	l.str("question")
	opts, ook := l.strList("answer_options")
	if ook && (len(opts) != 4 || opts[3] != benchmark.LocationNone) {
		c.add(Error, "bad_options", l.loc("answer_options"), "location needs 4 options ending in %q", benchmark.LocationNone)
		ook = false
	}
	ans, aok := l.str("answer")
	idx, iok := l.intList("answer_index")
	if iok && ook && c.multiselect(idx, 4, l.loc("answer_index"), true) && aok {
		parts := make([]string, len(idx))
		for i, k := range idx {
			parts[i] = opts[k-1]
		}
		if w := strings.Join(parts, ", "); ans != w {
			c.add(Error, "answer_inconsistent", l.loc("answer"), "answer %q is not the joined option texts %q", ans, w)
		}
	}
	l.strList("answer_zones")
	l.unknown()
}

// severity: the index follows overlap_ratio in thirds.
func (c *checker) severity(s *obj) {
	idx, ok := c.single(s, func(opts []string) string {
		if len(opts) != 3 {
			return fmt.Sprintf("severity needs 3 options, found %d", len(opts))
		}
		return ""
	})
	ratio, rok := s.number("overlap_ratio")
	if lung, lok := s.str("selected_lung"); lok && lung != "left lung" && lung != "right lung" {
		c.add(Warning, "attribute_gt_inconsistent", s.loc("selected_lung"), "selected_lung %q is neither \"left lung\" nor \"right lung\"", lung)
	}
	if ok && rok {
		// Compare 3·ratio with 1 and 2 exactly, so 1/3 itself is not
		// lost to rounding of the literal.
		three := new(big.Float).Mul(ratio, big.NewFloat(3))
		exp := 3
		if three.Cmp(big.NewFloat(1)) < 0 {
			exp = 1
		} else if three.Cmp(big.NewFloat(2)) < 0 {
			exp = 2
		}
		if idx != exp {
			c.add(Warning, "attribute_gt_inconsistent", s.loc("answer_index"), "overlap_ratio %s implies index %d, found %d", ratio.Text('g', 10), exp, idx)
		}
	}
	s.unknown()
}

// comparison: the index follows the lung sizes and overlap flags
// (ComparisonIndex).
func (c *checker) comparison(cm *obj) {
	idx, ok := c.single(cm, func(opts []string) string {
		if len(opts) != 4 {
			return fmt.Sprintf("comparison needs 4 options, found %d", len(opts))
		}
		return ""
	})
	left, lok := cm.integer("left_size")
	right, rok := cm.integer("right_size")
	lo, look := cm.boolean("left_has_overlap")
	ro, rook := cm.boolean("right_has_overlap")
	if ok && look && rook && lok && rok {
		exp := ComparisonIndex(left, right, lo, ro)
		if idx != exp {
			c.add(Warning, "attribute_gt_inconsistent", cm.loc("answer_index"), "sizes %d/%d with overlaps %v/%v imply index %d, found %d", left, right, lo, ro, exp, idx)
		}
	}
	cm.unknown()
}

// ComparisonIndex is the comparison answer implied by the sizes and
// overlap flags (build.md §10): one or no lung involved → 4; otherwise
// similar (2·max < 3·min) → 1, left larger (2·left ≥ 3·right) → 2, else 3.
func ComparisonIndex(left, right int, leftOverlap, rightOverlap bool) int {
	if !(leftOverlap && rightOverlap) {
		return 4
	}
	mx, mn := max(left, right), min(left, right)
	switch {
	case 2*mx < 3*mn:
		return 1
	case 2*left >= 3*right:
		return 2
	}
	return 3
}
