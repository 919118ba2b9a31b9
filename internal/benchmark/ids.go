package benchmark

import (
	"regexp"
	"strconv"
	"strings"
)

// Identifier patterns of format.md §2.
var (
	// KeyIDPattern matches the form of a key_id; group 1 is the lesion
	// name (whether it is a lesion of the benchmark's set is checked
	// apart, LesionSet.ParseKeyID), group 2 the pair_id.
	KeyIDPattern = regexp.MustCompile(`^([a-z][a-z0-9]{0,31})_([A-Za-z0-9][A-Za-z0-9.-]{0,63}_(positive|negative)_[0-9]+)$`)
	// DicomIDPattern is the MIMIC-CXR DICOM id form.
	DicomIDPattern = regexp.MustCompile(`^[0-9a-f]{8}(-[0-9a-f]{8}){4}$`)
	// mimicPairPattern tells MIMIC records (pair_id s<digits>_...) apart.
	mimicPairPattern = regexp.MustCompile(`^s[0-9]+_`)
	// OptionFilePattern is pattern P of format.md §8.4.
	OptionFilePattern = regexp.MustCompile(`^option_([1-9][0-9]*)_mask_(answer|fake)\.png$`)
)

// LesionOf returns the part of a key before its first underscore (the
// whole key when it has none). It does not check the name.
func LesionOf(key string) string {
	if i := strings.IndexByte(key, '_'); i >= 0 {
		return key[:i]
	}
	return key
}

// IsMIMICPairID reports whether a pair_id has the MIMIC form s<digits>_…,
// the only records whose dicom_id is checked (format.md §2).
func IsMIMICPairID(pairID string) bool { return mimicPairPattern.MatchString(pairID) }

// NoneOption is the colour string of the final point option and the
// answer of a point question whose answer is None.
const NoneOption = "None"

// LocationNone is the last location option.
const LocationNone = "None of the above (options 1-3)"

// DistributionOptions are the fixed distribution labels (format.md §3.5).
var DistributionOptions = []string{"1 zone", "2 zones", "3 zones", "4 zones or more"}

// YesNo are the detection and contour-eval options.
var YesNo = []string{"Yes", "No"}

// ContourEvalRelPath is contour_eval_qa.relative_path, always.
const ContourEvalRelPath = "contour_eval_qa/xray_with_mask.png"

// Ordinal returns the revision-result label of option n: "1st", "2nd",
// "3rd", otherwise "<n>th" (protocol.md §3).
func Ordinal(n int) string {
	switch n {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return strconv.Itoa(n) + "th"
}

// OrdinalMask returns "<ordinal> mask", the revision-result option text.
func OrdinalMask(n int) string { return Ordinal(n) + " mask" }

// Questions returns the number of questions asked for the record.
func (r *Record) Questions() int { return QuestionsFor(r.Path(), r.IsHeartType()) }

// ImagesFor returns the number of images a record of path p has, given
// its number of revision options (format.md §1).
func ImagesFor(p Path, revisionOptions int) int {
	switch p {
	case LesionFree:
		return 1
	case RevisionFree:
		return 2
	}
	return 2 + 1 + revisionOptions
}
