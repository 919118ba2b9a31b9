package benchmark

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// Benchmark is a loaded benchmark directory.
type Benchmark struct {
	Dir     string    // the benchmark directory as given to its reader
	Records []*Record // in file order
	SHA256  string    // lowercase hex SHA-256 of the chexpercept.json bytes
	// Lesions is the benchmark's lesion set: the declaration beside
	// chexpercept.json (LesionsFileName), or the built-in seven.
	Lesions *LesionSet
	// Identity is what the benchmark is: the SHA-256 of its build's
	// SHA256SUMS when it has one (the loader of the directory sets it),
	// else that of chexpercept.json.
	Identity Identity

	byKey map[string]*Record
}

// Identity names a benchmark by the SHA-256 of one file: its SHA256SUMS,
// which lists the SHA-256 of chexpercept.json and of every other file the
// build wrote, or, for a benchmark without one, chexpercept.json (whose
// images are then not covered). Two benchmarks with equal identities are
// the same benchmark. The zero Identity is unknown (a run or study made
// before identities were recorded).
type Identity struct {
	File   string `json:"file"`   // "SHA256SUMS" or JSONName
	SHA256 string `json:"sha256"` // lowercase hex
}

// Known reports whether the identity was recorded.
func (id Identity) Known() bool { return id.SHA256 != "" }

// String is the identity in full, "SHA256SUMS sha256:<64 hex>", or
// "unknown".
func (id Identity) String() string {
	if !id.Known() {
		return "unknown"
	}
	return textsafe.OneLine(id.File) + " sha256:" + textsafe.OneLine(id.SHA256)
}

// Short is the identity for tables and messages: the file and the first
// 12 hex digits of its SHA-256, or "unknown".
func (id Identity) Short() string {
	if !id.Known() {
		return "unknown"
	}
	return textsafe.OneLine(id.File) + " " + textsafe.Clip(textsafe.OneLine(id.SHA256), 12)
}

// Lookup returns the record with the given key_id, or nil.
func (b *Benchmark) Lookup(keyID string) *Record { return b.byKey[keyID] }

// decodeError is a Decode failure: the file, the record (empty for the top
// level), a JSON Pointer inside the file and the reason.
type decodeError struct {
	File    string
	KeyID   string
	Pointer string
	Reason  string
}

func (e *decodeError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.KeyID != "" {
		b.WriteString(": record ")
		b.WriteString(e.KeyID)
	}
	if e.Pointer != "" {
		b.WriteString(" at ")
		b.WriteString(e.Pointer)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return textsafe.OneLine(b.String())
}

// FromJSON is the benchmark of the chexpercept.json bytes data read from
// the benchmark directory dir, whose lesion set is lesions (nil = the
// built-in seven); errors are Decode's, naming dir's chexpercept.json.
func FromJSON(dir string, data []byte, lesions *LesionSet) (*Benchmark, error) {
	if lesions == nil {
		lesions = DefaultLesions()
	}
	recs, err := Decode(filepath.Join(dir, JSONName), data, lesions)
	if err != nil {
		return nil, err
	}
	sum := SHA256Hex(data)
	b := &Benchmark{Dir: dir, Records: recs, SHA256: sum, Lesions: lesions, Identity: Identity{File: JSONName, SHA256: sum}, byKey: make(map[string]*Record, len(recs))}
	for _, r := range recs {
		b.byKey[r.KeyID] = r
	}
	return b, nil
}

// SHA256Hex is the lowercase hex SHA-256 of b, the form of every digest
// in a benchmark, its side files and manifests.
func SHA256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Decode parses chexpercept.json bytes into records; file names the
// source in errors; lesions is the benchmark's set (nil = the built-in seven).
func Decode(file string, data []byte, lesions *LesionSet) ([]*Record, error) {
	if lesions == nil {
		lesions = DefaultLesions()
	}
	root, err := ojson.Parse(data)
	if err != nil {
		return nil, &decodeError{File: file, Reason: "invalid JSON: " + err.Error()}
	}
	if root.Kind != ojson.KindObject {
		return nil, &decodeError{File: file, Pointer: "/", Reason: "top level is not an object"}
	}
	if dups := ojson.Duplicates(root); len(dups) > 0 {
		d, kid := dups[0], ""
		if d.Pointer != "" {
			kid = strings.SplitN(d.Pointer[1:], "/", 2)[0]
		}
		return nil, &decodeError{File: file, KeyID: kid, Pointer: d.Pointer + "/" + ojson.EscapePointer(d.Key), Reason: fmt.Sprintf("duplicate member %q", d.Key)}
	}
	if len(root.O) == 0 {
		return nil, &decodeError{File: file, Reason: "no records"}
	}
	recs := make([]*Record, 0, len(root.O))
	for _, m := range root.O {
		d := &decoder{file: file, key: m.Key, lesions: lesions}
		r := d.record(m.Key, m.Value)
		if d.err != nil {
			return nil, d.err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// decoder turns one record's value tree into a Record. It keeps the first
// error and turns later calls into no-ops so the decoding code reads
// straight through.
type decoder struct {
	file    string
	key     string
	lesions *LesionSet
	err     error
}

func (d *decoder) fail(ptr, format string, args ...any) {
	if d.err == nil {
		d.err = &decodeError{File: d.file, KeyID: d.key, Pointer: ptr, Reason: fmt.Sprintf(format, args...)}
	}
}

// obj is an object being decoded; get marks fields as required.
type obj struct {
	d   *decoder
	ptr string
	v   *ojson.Value
}

func (d *decoder) object(v *ojson.Value, ptr string) *obj {
	if v == nil || v.Kind != ojson.KindObject {
		d.fail(ptr, "expected an object, found %s", ojson.KindName(v))
		return &obj{d: d, ptr: ptr}
	}
	return &obj{d: d, ptr: ptr, v: v}
}

func (o *obj) child(key string) string { return o.ptr + "/" + ojson.EscapePointer(key) }

// get returns the member, failing when it is absent.
func (o *obj) get(key string) *ojson.Value {
	if o.v == nil || o.d.err != nil {
		return nil
	}
	m := o.v.Get(key)
	if m == nil {
		o.d.fail(o.child(key), "missing field %q", key)
	}
	return m
}

func (o *obj) str(key string) string {
	v := o.get(key)
	if v == nil {
		return ""
	}
	if v.Kind != ojson.KindString {
		o.d.fail(o.child(key), "expected a string, found %s", ojson.KindName(v))
		return ""
	}
	return v.S
}

func (o *obj) boolean(key string) bool {
	v := o.get(key)
	if v == nil {
		return false
	}
	if v.Kind != ojson.KindBool {
		o.d.fail(o.child(key), "expected a boolean, found %s", ojson.KindName(v))
		return false
	}
	return v.B
}

func (d *decoder) intValue(v *ojson.Value, ptr string) int {
	if v == nil || d.err != nil {
		return 0
	}
	n, ok := ojson.IntLiteral(v)
	if !ok {
		if v.Kind == ojson.KindNumber {
			d.fail(ptr, "expected an integer, found %s", v.N)
		} else {
			d.fail(ptr, "expected an integer, found %s", ojson.KindName(v))
		}
	}
	return n
}

func (o *obj) int(key string) int { return o.d.intValue(o.get(key), o.child(key)) }

func (o *obj) number(key string) string {
	v := o.get(key)
	if v == nil {
		return "0"
	}
	if v.Kind != ojson.KindNumber {
		o.d.fail(o.child(key), "expected a number, found %s", ojson.KindName(v))
		return "0"
	}
	return v.N
}

func (d *decoder) array(v *ojson.Value, ptr string) []*ojson.Value {
	if v == nil || d.err != nil {
		return nil
	}
	if v.Kind != ojson.KindArray {
		d.fail(ptr, "expected an array, found %s", ojson.KindName(v))
		return nil
	}
	return v.A
}

func (d *decoder) strings(v *ojson.Value, ptr string) []string {
	a := d.array(v, ptr)
	out := make([]string, 0, len(a))
	for i, e := range a {
		if e.Kind != ojson.KindString {
			d.fail(ptr+"/"+strconv.Itoa(i), "expected a string, found %s", ojson.KindName(e))
			return nil
		}
		out = append(out, e.S)
	}
	return out
}

func (o *obj) strs(key string) []string { return o.d.strings(o.get(key), o.child(key)) }

func (o *obj) ints(key string) []int {
	ptr := o.child(key)
	a := o.d.array(o.get(key), ptr)
	out := make([]int, 0, len(a))
	for i, e := range a {
		out = append(out, o.d.intValue(e, ptr+"/"+strconv.Itoa(i)))
	}
	return out
}

func (o *obj) namedMasks(key string) NamedMasks {
	sub := o.d.object(o.get(key), o.child(key))
	if sub.v == nil {
		return nil
	}
	out := make(NamedMasks, 0, len(sub.v.O))
	for _, m := range sub.v.O {
		out = append(out, NamedMaskList{Component: m.Key, Masks: o.d.strings(m.Value, sub.child(m.Key))})
	}
	return out
}

func (d *decoder) record(key string, v *ojson.Value) *Record {
	ptr := "/" + ojson.EscapePointer(key)
	lesion, pairID, err := d.lesions.ParseKeyID(key)
	if err != nil {
		d.fail(ptr, "%v", err)
		return nil
	}
	o := d.object(v, ptr)
	if o.v == nil {
		return nil
	}
	r := &Record{KeyID: key, Lesion: lesion}
	r.Detection = d.yesNo(o.get("detection_qa"), o.child("detection_qa"))
	r.PairID = o.str("pair_id")
	if d.err == nil && r.PairID != pairID {
		d.fail(o.child("pair_id"), "pair_id %q differs from the key's %q", r.PairID, pairID)
	}
	if dv := o.get("dicom_id"); dv != nil {
		switch dv.Kind {
		case ojson.KindNull:
		case ojson.KindString:
			s := dv.S
			r.DicomID = &s
		default:
			d.fail(o.child("dicom_id"), "expected a string or null, found %s", ojson.KindName(dv))
		}
	}
	if d.err != nil {
		return nil
	}
	if r.Detection.Answer != "Yes" {
		return r // lesion-free: other fields are ignored
	}
	r.Contour = d.contour(o.get("contour_qa"), o.child("contour_qa"))
	if d.err != nil {
		return nil
	}
	if d.lesions.IsHeart(r.Lesion) {
		// The key should be present and null; an omitted key is written
		// back as null, which is the spec's form.
		if av := o.v.Get("attribute_extraction_qa"); av != nil && av.Kind != ojson.KindNull {
			d.fail(o.child("attribute_extraction_qa"), "must be null for %s, found %s", r.Lesion, ojson.KindName(av))
		}
		r.AttributesNull = true
	} else {
		r.Attributes = d.attributes(o.get("attribute_extraction_qa"), o.child("attribute_extraction_qa"))
	}
	if rs := o.v.Get("revision_sequential_qa"); rs != nil && d.err == nil {
		r.RevisionSequential = ojson.MarshalCompact(rs)
	}
	if d.err != nil {
		return nil
	}
	return r
}

func (d *decoder) yesNo(v *ojson.Value, ptr string) YesNoQA {
	o := d.object(v, ptr)
	return YesNoQA{
		Question:      o.str("question"),
		AnswerOptions: o.strs("answer_options"),
		Answer:        o.str("answer"),
		AnswerIndex:   o.int("answer_index"),
	}
}

func (d *decoder) contour(v *ojson.Value, ptr string) *ContourQA {
	o := d.object(v, ptr)
	c := &ContourQA{
		NoDeformation:       o.boolean("no_deformation"),
		InitialContext:      o.str("initial_context"),
		RevisionBeforeMasks: o.strs("revision_before_masks"),
		RevisionAfterMasks:  o.strs("revision_after_masks"),
		TrueMasks:           o.namedMasks("true_masks"),
		FakeMasks:           o.namedMasks("fake_masks"),
	}
	if tc := o.get("true_combination"); tc != nil && tc.Kind != ojson.KindNull {
		c.TrueCombination = d.strings(tc, o.child("true_combination"))
	}
	fcPtr := o.child("fake_combinations")
	for i, e := range d.array(o.get("fake_combinations"), fcPtr) {
		c.FakeCombinations = append(c.FakeCombinations, d.strings(e, fcPtr+"/"+strconv.Itoa(i)))
	}
	if c.FakeCombinations == nil {
		c.FakeCombinations = [][]string{}
	}
	cePtr := o.child("contour_eval_qa")
	ce := d.object(o.get("contour_eval_qa"), cePtr)
	c.ContourEval = ContourEvalQA{YesNoQA: d.yesNo(ce.v, cePtr), RelativePath: ce.str("relative_path")}
	c.Expansion = d.pointQA(o.get("contour_revision_qa_expansion"), o.child("contour_revision_qa_expansion"))
	c.Contraction = d.pointQA(o.get("contour_revision_qa_contraction"), o.child("contour_revision_qa_contraction"))
	c.RevisionResult = d.revisionQA(o.get("contour_revision_qa_revision_result"), o.child("contour_revision_qa_revision_result"))
	return c
}

func (d *decoder) pointQA(v *ojson.Value, ptr string) PointQA {
	o := d.object(v, ptr)
	q := PointQA{Question: o.str("question")}
	aoPtr := o.child("answer_options")
	for i, e := range d.array(o.get("answer_options"), aoPtr) {
		ep := aoPtr + "/" + strconv.Itoa(i)
		eo := d.object(e, ep)
		opt := PointOption{}
		if pv := eo.get("point"); pv != nil && pv.Kind != ojson.KindNull {
			xy := d.array(pv, eo.child("point"))
			if d.err == nil && len(xy) != 2 {
				d.fail(eo.child("point"), "expected [x, y], found %d elements", len(xy))
			}
			if d.err == nil {
				p := [2]int{d.intValue(xy[0], eo.child("point")+"/0"), d.intValue(xy[1], eo.child("point")+"/1")}
				opt.Point = &p
			}
		}
		opt.Color = eo.str("color")
		q.AnswerOptions = append(q.AnswerOptions, opt)
	}
	q.Answer = o.str("answer")
	q.AnswerIndex = d.indexList(o, "answer_index")
	return q
}

// indexList decodes a multi-select answer_index, which must be a list.
func (d *decoder) indexList(o *obj, key string) []int {
	if v := o.get(key); v != nil && v.Kind != ojson.KindArray {
		d.fail(o.child(key), "expected a list of integers (multi-select), found %s", ojson.KindName(v))
		return nil
	}
	return o.ints(key)
}

func (d *decoder) revisionQA(v *ojson.Value, ptr string) RevisionQA {
	o := d.object(v, ptr)
	q := RevisionQA{Question: o.str("question")}
	aoPtr := o.child("answer_options")
	for i, e := range d.array(o.get("answer_options"), aoPtr) {
		eo := d.object(e, aoPtr+"/"+strconv.Itoa(i))
		q.AnswerOptions = append(q.AnswerOptions, RevisionOption{
			Type:         eo.str("type"),
			Masks:        eo.strs("masks"),
			RelativePath: eo.str("relative_path"),
		})
	}
	q.Answer = o.str("answer")
	q.AnswerIndex = o.int("answer_index")
	return q
}

// Attribute keys in written order (format.md §3.5).
const (
	attrDistribution = "distribution"
	attrLocation     = "location"
	attrSeverity     = "severity/measurement"
	attrComparison   = "comparison"
)

func (d *decoder) attributes(v *ojson.Value, ptr string) *AttributeQA {
	if v != nil && v.Kind == ojson.KindNull {
		d.fail(ptr, "must be an object for a positive record of a lung-type lesion, found null")
		return nil
	}
	o := d.object(v, ptr)
	a := &AttributeQA{}
	{
		s := d.object(o.get(attrDistribution), o.child(attrDistribution))
		a.Distribution = DistributionQA{Question: s.str("question"), AnswerOptions: s.strs("answer_options"),
			Answer: s.str("answer"), AnswerIndex: s.int("answer_index"), AnswerZones: s.strs("answer_zones")}
	}
	{
		s := d.object(o.get(attrLocation), o.child(attrLocation))
		a.Location = LocationQA{Question: s.str("question"), AnswerOptions: s.strs("answer_options"),
			Answer: s.str("answer")}
		a.Location.AnswerIndex = d.indexList(s, "answer_index")
		a.Location.AnswerZones = s.strs("answer_zones")
	}
	{
		s := d.object(o.get(attrSeverity), o.child(attrSeverity))
		a.Severity = SeverityQA{Question: s.str("question"), AnswerOptions: s.strs("answer_options"),
			Answer: s.str("answer"), AnswerIndex: s.int("answer_index"), OverlapRatio: s.number("overlap_ratio"),
			SelectedLung: s.str("selected_lung")}
	}
	{
		s := d.object(o.get(attrComparison), o.child(attrComparison))
		a.Comparison = ComparisonQA{Question: s.str("question"), AnswerOptions: s.strs("answer_options"),
			Answer: s.str("answer"), AnswerIndex: s.int("answer_index"), LeftSize: s.int("left_size"),
			RightSize: s.int("right_size"), LeftHasOverlap: s.boolean("left_has_overlap"),
			RightHasOverlap: s.boolean("right_has_overlap")}
	}
	return a
}

// Questions returns the number of questions (= model calls) the
// benchmark asks (format.md §8.6).
func (b *Benchmark) Questions() int {
	n := 0
	for _, r := range b.Records {
		n += r.Questions()
	}
	return n
}
