package benchmark

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// The lesion set is data. A LesionDef says everything the pipeline needs to
// know about one lesion; a LesionSet is an ordered list of them. The seven
// lesions of the released benchmark are the built-in default
// (DefaultLesionDefs) and the only place lesion names appear in code. A
// build may add or redefine lesions in its configuration; the benchmark it
// writes then declares its set in LesionsFileName beside chexpercept.json,
// and every later stage (validate, eval, rescore, report, the review and
// reading apps) reads the set from there. A benchmark without that file
// holds the seven.

// LesionKind is how a lesion is examined.
type LesionKind string

const (
	// LungKind lesions have all four stages; their attributes are judged
	// over the lungs.
	LungKind LesionKind = "lung"
	// HeartKind lesions have no attribute stage (the mask is the heart).
	HeartKind LesionKind = "heart"
)

// DetectionWording picks the detection question's phrasing.
type DetectionWording string

const (
	// DirectWording asks whether any such lesion is visible.
	DirectWording DetectionWording = "direct"
	// SuggestiveWording asks whether any finding suggestive of the lesion
	// is visible.
	SuggestiveWording DetectionWording = "suggestive"
)

// LesionDef is one lesion's definition.
type LesionDef struct {
	// Name is the lesion's identifier: lowercase letters and digits,
	// starting with a letter (it prefixes key ids, so it has no "_").
	Name string `json:"name" yaml:"name"`
	// Display is the name shown to people in reports ("Pleural effusion").
	Display string `json:"display" yaml:"display"`
	// Kind is lung or heart.
	Kind LesionKind `json:"kind" yaml:"kind"`
	// Detection is the detection question's wording variant.
	Detection DetectionWording `json:"detection" yaml:"detection"`
	// HeartNote says whether questions about the mask add the sentence
	// that parts of the lesion overlapping the heart need not be
	// considered.
	HeartNote bool `json:"heart_note" yaml:"heart_note"`
	// SourceNames are the names the lesion is read under in source data
	// (manifest labels, MIMIC-ILS targets); the name itself always counts.
	SourceNames []string `json:"source_names" yaml:"source_names"`
	// Phantom is the shape family the phantom generator draws for the
	// lesion ("" = the lesion cannot be generated). Not part of a
	// benchmark's declaration.
	Phantom string `json:"-" yaml:"phantom"`
}

// Heart reports whether the lesion is heart-type.
func (d LesionDef) Heart() bool { return d.Kind == HeartKind }

// DefaultLesionDefs returns the definitions of the seven lesions of the
// released benchmark, in the reference's sampling order. It is the one
// table in the program that names lesions.
func DefaultLesionDefs() []LesionDef {
	lung := func(name, display string, w DetectionWording, shape string) LesionDef {
		return LesionDef{Name: name, Display: display, Kind: LungKind, Detection: w, HeartNote: true,
			SourceNames: []string{name}, Phantom: shape}
	}
	return []LesionDef{
		{Name: "cardiomegaly", Display: "Cardiomegaly", Kind: HeartKind, Detection: SuggestiveWording,
			SourceNames: []string{"cardiomegaly"}, Phantom: "enlarged-heart"},
		lung("consolidation", "Consolidation", DirectWording, "lobar"),
		lung("edema", "Edema", SuggestiveWording, "perihilar"),
		lung("atelectasis", "Atelectasis", SuggestiveWording, "volume-loss"),
		lung("pneumonia", "Pneumonia", SuggestiveWording, "multifocal"),
		lung("opacity", "Opacity", DirectWording, "patchy"),
		lung("effusion", "Effusion", SuggestiveWording, "pleural-fluid"),
	}
}

// LesionSet is an ordered, validated set of lesion definitions. A nil
// *LesionSet stands for the built-in seven.
type LesionSet struct {
	defs     []LesionDef
	byName   map[string]int
	bySource map[string]int
}

var lesionNamePattern = regexp.MustCompile(`^[a-z][a-z0-9]{0,31}$`)

// NewLesionSet checks defs and returns them as a set: names are valid and
// unique, kinds and wordings are known, and no source name is claimed by
// two lesions.
func NewLesionSet(defs []LesionDef) (*LesionSet, error) {
	if len(defs) == 0 {
		return nil, errors.New("no lesions defined")
	}
	s := &LesionSet{byName: map[string]int{}, bySource: map[string]int{}}
	for i, d := range defs {
		at := fmt.Sprintf("lesion %d", i+1)
		if d.Name != "" {
			at = fmt.Sprintf("lesion %q", textsafe.OneLine(d.Name))
		}
		if !lesionNamePattern.MatchString(d.Name) {
			return nil, fmt.Errorf("%s: name must be 1 to 32 lowercase letters and digits, starting with a letter", at)
		}
		if _, dup := s.byName[d.Name]; dup {
			return nil, fmt.Errorf("%s: defined twice", at)
		}
		switch d.Kind {
		case LungKind, HeartKind:
		default:
			return nil, fmt.Errorf("%s: kind %q is not lung or heart", at, textsafe.OneLine(string(d.Kind)))
		}
		switch d.Detection {
		case DirectWording, SuggestiveWording:
		default:
			return nil, fmt.Errorf("%s: detection %q is not direct or suggestive", at, textsafe.OneLine(string(d.Detection)))
		}
		if d.Display == "" {
			d.Display = d.Name
		}
		if len(d.Display) > 80 || textsafe.OneLine(d.Display) != d.Display {
			return nil, fmt.Errorf("%s: display name must be one printable line of at most 80 bytes", at)
		}
		d.SourceNames = slices.Clone(d.SourceNames)
		if !slices.Contains(d.SourceNames, d.Name) {
			d.SourceNames = append([]string{d.Name}, d.SourceNames...)
		}
		s.byName[d.Name] = i
		s.defs = append(s.defs, d)
	}
	for i, d := range s.defs {
		for _, src := range d.SourceNames {
			if src == "" || len(src) > 128 || textsafe.OneLine(src) != src {
				return nil, fmt.Errorf("lesion %q: source name %q must be one printable line of 1 to 128 bytes", d.Name, textsafe.OneLine(src))
			}
			if j, taken := s.bySource[src]; taken && j != i {
				return nil, fmt.Errorf("lesion %q: source name %q is also claimed by %q", d.Name, src, s.defs[j].Name)
			}
			s.bySource[src] = i
		}
	}
	return s, nil
}

var defaultLesionSet = func() *LesionSet {
	s, err := NewLesionSet(DefaultLesionDefs())
	if err != nil {
		panic(err) // a defect in the built-in table, caught by the package tests
	}
	return s
}()

// DefaultLesions is the built-in set of the seven lesions.
func DefaultLesions() *LesionSet { return defaultLesionSet }

// WithDefaults returns the built-in definitions with defs applied: a
// definition with a built-in name replaces it in place, a new name is
// appended, in the order given. A definition without a name, or a name
// given twice in defs, is an error naming the definition's place in defs.
func WithDefaults(defs []LesionDef) (*LesionSet, error) {
	seen := map[string]int{}
	for i, d := range defs {
		if d.Name == "" {
			return nil, fmt.Errorf("definition %d: no name", i+1)
		}
		if j, dup := seen[d.Name]; dup {
			return nil, fmt.Errorf("lesion %q: defined twice (definitions %d and %d)", textsafe.OneLine(d.Name), j+1, i+1)
		}
		seen[d.Name] = i
	}
	all := DefaultLesionDefs()
	for _, d := range defs {
		if i := slices.IndexFunc(all, func(b LesionDef) bool { return b.Name == d.Name }); i >= 0 {
			all[i] = d
			continue
		}
		all = append(all, d)
	}
	return NewLesionSet(all)
}

// orDefault lets a nil *LesionSet stand for the built-in seven.
func (s *LesionSet) orDefault() *LesionSet {
	if s == nil {
		return defaultLesionSet
	}
	return s
}

// Defs returns a copy of the definitions, in order.
func (s *LesionSet) Defs() []LesionDef {
	s = s.orDefault()
	out := slices.Clone(s.defs)
	for i := range out {
		out[i].SourceNames = slices.Clone(out[i].SourceNames)
	}
	return out
}

// Names lists the lesion names in declared order.
func (s *LesionSet) Names() []string {
	s = s.orDefault()
	out := make([]string, len(s.defs))
	for i, d := range s.defs {
		out[i] = d.Name
	}
	return out
}

// HeartNames lists the heart-type lesions in declared order.
func (s *LesionSet) HeartNames() []string {
	s = s.orDefault()
	var out []string
	for _, d := range s.defs {
		if d.Heart() {
			out = append(out, d.Name)
		}
	}
	return out
}

// Has reports whether name is a lesion of the set.
func (s *LesionSet) Has(name string) bool {
	s = s.orDefault()
	_, ok := s.byName[name]
	return ok
}

// Def returns the definition of name.
func (s *LesionSet) Def(name string) (LesionDef, bool) {
	s = s.orDefault()
	i, ok := s.byName[name]
	if !ok {
		return LesionDef{}, false
	}
	return s.defs[i], true
}

// IsHeart reports whether name is a heart-type lesion of the set.
func (s *LesionSet) IsHeart(name string) bool {
	d, ok := s.Def(name)
	return ok && d.Heart()
}

// FromSource returns the lesion a source name stands for.
func (s *LesionSet) FromSource(name string) (string, bool) {
	s = s.orDefault()
	i, ok := s.bySource[name]
	if !ok {
		return "", false
	}
	return s.defs[i].Name, true
}

// Index is name's position in the declared order (-1 when absent).
func (s *LesionSet) Index(name string) int {
	s = s.orDefault()
	if i, ok := s.byName[name]; ok {
		return i
	}
	return -1
}

// IsDefault reports whether the set is exactly the built-in one.
func (s *LesionSet) IsDefault() bool {
	s = s.orDefault()
	if len(s.defs) != len(defaultLesionSet.defs) {
		return false
	}
	for i, d := range s.defs {
		b := defaultLesionSet.defs[i]
		if d.Name != b.Name || d.Display != b.Display || d.Kind != b.Kind || d.Detection != b.Detection ||
			d.HeartNote != b.HeartNote || !slices.Equal(d.SourceNames, b.SourceNames) {
			return false
		}
	}
	return true
}

// Describe lists the names for messages: "a, b, c".
func (s *LesionSet) Describe() string { return strings.Join(s.Names(), ", ") }

// Sort orders names by the set's declared order; names outside the set go
// last, in byte order.
func (s *LesionSet) Sort(names []string) {
	s = s.orDefault()
	slices.SortStableFunc(names, func(a, b string) int {
		ia, ib := s.Index(a), s.Index(b)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return strings.Compare(a, b)
	})
}

// ParseKeyID splits a key_id into its lesion and pair_id, checking the
// form of format.md's key ids and that the lesion is one of the set.
func (s *LesionSet) ParseKeyID(key string) (lesion, pairID string, err error) {
	s = s.orDefault()
	m := KeyIDPattern.FindStringSubmatch(key)
	if m == nil || !s.Has(m[1]) {
		if l := LesionOf(key); !s.Has(l) {
			return "", "", fmt.Errorf("key_id %q: unknown lesion %q", textsafe.OneLine(key), textsafe.OneLine(l))
		}
		return "", "", fmt.Errorf("key_id %q does not match <lesion>_<stem>_(positive|negative)_<n>", textsafe.OneLine(key))
	}
	return m[1], m[2], nil
}

// LesionsFileName is the side file in which a benchmark declares its
// lesion set. It is written only when the set is not the built-in one.
const LesionsFileName = "lesions.json"

// LesionsFormat is the format id of LesionsFileName.
const LesionsFormat = "chexpercept-lesions/1"

// maxLesionsFileSize bounds LesionsFileName (a few kilobytes in practice).
const maxLesionsFileSize = 1 << 20

type lesionsFile struct {
	Format  string      `json:"format"`
	Lesions []LesionDef `json:"lesions"`
}

// MarshalLesions encodes a lesion declaration. A declaration over the
// size ReadLesions accepts is an error: a benchmark whose readers
// (validate, eval) would refuse it is never written.
func MarshalLesions(s *LesionSet) ([]byte, error) {
	b, err := ojson.EncodeIndent(lesionsFile{Format: LesionsFormat, Lesions: s.Defs()})
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	if len(b) > maxLesionsFileSize {
		return nil, fmt.Errorf("%d lesions declare %d bytes, over the %d-byte limit of %s", len(s.Defs()), len(b), maxLesionsFileSize, LesionsFileName)
	}
	return b, nil
}

// ParseLesions decodes a lesion declaration; name is the file, for errors.
func ParseLesions(name string, data []byte) (*LesionSet, error) {
	var f lesionsFile
	if err := ojson.Decode(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if f.Format != LesionsFormat {
		return nil, fmt.Errorf("%s: format %q is not %q", name, textsafe.OneLine(f.Format), LesionsFormat)
	}
	s, err := NewLesionSet(f.Lesions)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// ReadLesions returns the lesion set that the benchmark in dir declares,
// or the built-in seven when it declares none.
func ReadLesions(dir string) (*LesionSet, error) {
	name := filepath.Join(dir, LesionsFileName)
	f, err := safefile.Open(name, safefile.NoFollow)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return DefaultLesions(), nil
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLesionsFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxLesionsFileSize {
		return nil, fmt.Errorf("%s: exceeds the %d-byte limit", name, maxLesionsFileSize)
	}
	return ParseLesions(name, data)
}

// WriteLesions writes the declaration into dir when s is not the built-in
// set, and removes nothing: a default build writes no file.
func WriteLesions(j *job.Job, dir string, s *LesionSet) error {
	if s.IsDefault() {
		return nil
	}
	data, err := MarshalLesions(s)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(j, filepath.Join(dir, LesionsFileName), data)
}
