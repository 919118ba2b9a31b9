package validate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// sampleDir is the committed hand-made benchmark shared with package
// benchmark (all four record shapes, real 1024×1024 PNGs).
const sampleDir = "../benchmark/testdata/sample"

// Record keys of the sample.
const (
	kLF    = "edema_s50414267_negative_3"
	kLF2   = "effusion_ph0002_negative_0"
	kRF    = "pneumonia_s57001234_positive_0"
	kRR    = "atelectasis_s56543210_positive_1" // true revision option is 4
	kRR2   = "opacity_ph0007_positive_0"
	kHRR   = "cardiomegaly_s55123456_positive_0" // true revision option is 1
	kHRF   = "cardiomegaly_s55123457_positive_0"
	rrDir  = "chexpercept/" + kRR
	hrrRev = "chexpercept/" + kHRR + "/contour_qa/contour_revision_qa"
)

// tree edits chexpercept.json through its ojson tree.
type tree struct{ root *ojson.Value }

// lookup returns the parent container and the last token of ptr.
func (tr tree) lookup(t testing.TB, ptr string) (*ojson.Value, string) {
	toks := strings.Split(ptr[1:], "/")
	v := tr.root
	for _, tok := range toks[:len(toks)-1] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if v.Kind == ojson.KindArray {
			i, _ := strconv.Atoi(tok)
			v = v.A[i]
		} else {
			v = v.Get(tok)
		}
		if v == nil {
			t.Fatalf("no %s in the sample", ptr)
		}
	}
	last := strings.ReplaceAll(strings.ReplaceAll(toks[len(toks)-1], "~1", "/"), "~0", "~")
	return v, last
}

func (tr tree) get(t testing.TB, ptr string) *ojson.Value {
	p, k := tr.lookup(t, ptr)
	if p.Kind == ojson.KindArray {
		i, _ := strconv.Atoi(k)
		return p.A[i]
	}
	return p.Get(k)
}

// set replaces (or appends) a member or array element.
func (tr tree) set(t testing.TB, ptr string, val *ojson.Value) {
	p, k := tr.lookup(t, ptr)
	if p.Kind == ojson.KindArray {
		i, _ := strconv.Atoi(k)
		if i == len(p.A) {
			p.A = append(p.A, val)
		} else {
			p.A[i] = val
		}
		return
	}
	for i := range p.O {
		if p.O[i].Key == k {
			p.O[i].Value = val
			return
		}
	}
	p.Set(k, val)
}

func (tr tree) del(t testing.TB, ptr string) {
	p, k := tr.lookup(t, ptr)
	if p.Kind == ojson.KindArray {
		i, _ := strconv.Atoi(k)
		p.A = append(p.A[:i], p.A[i+1:]...)
		return
	}
	for i := range p.O {
		if p.O[i].Key == k {
			p.O = append(p.O[:i], p.O[i+1:]...)
			return
		}
	}
	t.Fatalf("no %s to delete", ptr)
}

func (tr tree) rename(t testing.TB, ptr, newKey string) {
	p, k := tr.lookup(t, ptr)
	for i := range p.O {
		if p.O[i].Key == k {
			p.O[i].Key = newKey
			return
		}
	}
	t.Fatalf("no %s to rename", ptr)
}

// both applies an edit to the expansion and the contraction options,
// which must stay equal.
func (tr tree) both(t testing.TB, key, sub string, val *ojson.Value) {
	for _, q := range []string{"expansion", "contraction"} {
		tr.set(t, "/"+key+"/contour_qa/contour_revision_qa_"+q+"/answer_options"+sub, val)
	}
}

func parse(t testing.TB, s string) *ojson.Value {
	v, err := ojson.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// bench is a writable copy of the sample.
type bench struct {
	t   testing.TB
	dir string
}

func (b bench) path(rel string) string { return filepath.Join(b.dir, filepath.FromSlash(rel)) }

func (b bench) editJSON(f func(tr tree)) {
	data, err := os.ReadFile(b.path("chexpercept.json"))
	if err != nil {
		b.t.Fatal(err)
	}
	tr := tree{parse(b.t, string(data))}
	f(tr)
	b.write("chexpercept.json", ojson.Marshal(tr.root))
}

func (b bench) editRaw(f func(s string) string) {
	data, err := os.ReadFile(b.path("chexpercept.json"))
	if err != nil {
		b.t.Fatal(err)
	}
	b.write("chexpercept.json", []byte(f(string(data))))
}

func (b bench) write(rel string, data []byte) {
	if err := os.WriteFile(b.path(rel), data, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b bench) rm(rel string) {
	if err := os.RemoveAll(b.path(rel)); err != nil {
		b.t.Fatal(err)
	}
}

func (b bench) symlink(target, rel string) {
	b.rm(rel)
	if err := os.Symlink(target, b.path(rel)); err != nil {
		b.t.Fatal(err)
	}
}

func (b bench) mkdir(rel string) {
	if err := os.MkdirAll(b.path(rel), 0o755); err != nil {
		b.t.Fatal(err)
	}
}

// writeDeformation writes a deformation_results.json for kRR with one
// expansion step of component 0 and an undeformed component 1 whose
// mask_path is noDef, and the masks it names under masks/<kRR>/.
func writeDeformation(b bench, noDef string) {
	step := ojson.NewObject().Set("suboptimal_component_id", ojson.Str("suboptimal_component_0")).
		Set("exp_idx", ojson.Int(1)).Set("mask_path", ojson.Str("suboptimal_component_0_exp1"))
	none := ojson.NewObject().Set("suboptimal_component_id", ojson.Str("suboptimal_component_1")).
		Set("mask_path", ojson.Str(noDef))
	qa := ojson.NewObject().
		Set("expansion", ojson.NewObject().Set("suboptimal_component_0", ojson.Arr(step))).
		Set("contraction", ojson.NewObject()).
		Set("no_deformation", ojson.NewObject().Set("suboptimal_component_1", ojson.Arr(none)))
	b.write("deformation_results.json", ojson.Marshal(ojson.NewObject().Set(kRR, ojson.NewObject().Set("qa_deformation_results", qa))))
	b.mkdir("masks/" + kRR)
	for _, n := range []string{"optimal_component_0", "optimal_component_1", "suboptimal_component_0_exp1", "suboptimal_component_1_no_contraction"} {
		b.write("masks/"+kRR+"/"+n+".png", []byte("png"))
	}
}

func encodePNG(t testing.TB, img image.Image) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hugeHeader is a PNG signature and a valid IHDR claiming w×h 8-bit RGB,
// followed by a little junk instead of image data.
func hugeHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 17)
	copy(ihdr, "IHDR")
	binary.BigEndian.PutUint32(ihdr[4:], w)
	binary.BigEndian.PutUint32(ihdr[8:], h)
	ihdr[12], ihdr[13] = 8, 2
	binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(ihdr)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(ihdr))
	b.WriteString("\x00\x00\x00\x10IDATjunkjunkjunkjunk")
	return b.Bytes()
}

type row struct {
	name  string
	opt   Options
	edit  func(b bench)
	codes []string // exactly the codes expected, composition excluded
	exit  int
}

func str(s string) *ojson.Value { return ojson.Str(s) }

func TestFindings(t *testing.T) {
	t.Parallel()
	A := "/" + kRR
	AC := A + "/contour_qa"
	AA := A + "/attribute_extraction_qa"
	H := "/" + kHRR
	rows := []row{
		{name: "sample is valid", edit: func(b bench) {}, codes: nil, exit: 0},
		{name: "deep sample is valid", opt: Options{Deep: true}, edit: func(b bench) {}, codes: nil, exit: 0},

		// §8.1
		{"json absent", Options{}, func(b bench) { b.rm("chexpercept.json") }, []string{"missing_file"}, 1},
		{"image dir absent", Options{}, func(b bench) { b.rm("chexpercept") }, []string{"missing_file"}, 1},
		{"image dir is a file", Options{}, func(b bench) { b.rm("chexpercept"); b.write("chexpercept", []byte("x")) }, []string{"missing_file"}, 1},
		{"truncated json", Options{}, func(b bench) { b.editRaw(func(s string) string { return s[:len(s)-200] }) }, []string{"invalid_json"}, 1},
		{"non-UTF-8", Options{}, func(b bench) {
			b.editRaw(func(s string) string { return strings.Replace(s, "Look at", "Lo\xc3\x28k at", 1) })
		}, []string{"invalid_json"}, 1},
		{"trailing data", Options{}, func(b bench) { b.editRaw(func(s string) string { return s + "\n{}" }) }, []string{"invalid_json"}, 1},
		{"top-level array", Options{}, func(b bench) { b.editRaw(func(s string) string { return "[" + s + "]" }) }, []string{"not_object"}, 1},
		{"record not an object", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.set(t, "/"+kLF, ojson.Int(7)) }) }, []string{"not_object"}, 1},
		{"sub-object not an object", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/contour_revision_qa_revision_result", ojson.Arr()) })
		}, []string{"not_object", "option_image_mismatch"}, 1},
		{"duplicate member", Options{}, func(b bench) {
			b.editRaw(func(s string) string {
				return strings.Replace(s, `"pair_id": "s50414267_negative_3",`, `"pair_id": "s50414267_negative_3", "pair_id": "s50414267_negative_3",`, 1)
			})
		}, []string{"duplicate_key"}, 1},
		{"duplicate key_id", Options{}, func(b bench) {
			b.editRaw(func(s string) string {
				i := strings.Index(s, "  \""+kLF2+"\"")
				j := strings.Index(s, "  \""+kRF+"\"")
				return s[:j] + s[i:j] + s[j:]
			})
		}, []string{"duplicate_key"}, 1},
		{"empty benchmark", Options{}, func(b bench) { b.write("chexpercept.json", []byte("{}")) }, []string{"empty_benchmark"}, 1},

		// §8.2
		{"unknown lesion", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.rename(t, "/"+kLF, "oedema_s50414267_negative_3") })
		}, []string{"unknown_lesion", "orphan_folder"}, 1},
		{"bad key id", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.rename(t, "/"+kLF, "edema_s50414267_neg_3") })
		}, []string{"bad_key_id", "orphan_folder"}, 1},
		{"pair id mismatch", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.set(t, "/"+kLF+"/pair_id", str("s1_negative_3")) }) },
			[]string{"pair_id_mismatch"}, 1},
		{"polarity mismatch", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, "/"+kRF+"/detection_qa/answer", str("No"))
				tr.set(t, "/"+kRF+"/detection_qa/answer_index", ojson.Int(2))
			})
		}, []string{"polarity_mismatch", "unexpected_field", "unexpected_file"}, 0},
		{"bad dicom id", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.set(t, "/"+kLF+"/dicom_id", str("ABC")) }) },
			[]string{"bad_dicom_id"}, 0},
		{"null MIMIC dicom id", Options{Strict: true}, func(b bench) { b.editJSON(func(tr tree) { tr.set(t, "/"+kLF+"/dicom_id", ojson.Null()) }) },
			[]string{"bad_dicom_id"}, 1},
		{"null non-MIMIC dicom id is fine", Options{Strict: true}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, "/"+kRR2+"/dicom_id", ojson.Null()) })
		}, nil, 0},
		{"duplicate dicom", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, "/"+kRF+"/dicom_id", tr.get(t, "/"+kLF+"/dicom_id")) })
		}, []string{"duplicate_dicom"}, 0},

		// §8.3
		{"missing field", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.del(t, AC+"/initial_context") }) }, []string{"missing_field"}, 1},
		{"missing contour_qa", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.del(t, AC) }) }, []string{"missing_field"}, 1},
		{"contour_qa not an object", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC, ojson.Null()) })
			b.rm(rrDir + "/detection_qa/xray.png")
		}, []string{"not_object", "missing_image"}, 1},
		{"missing attributes", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.del(t, AA) }) }, []string{"missing_field"}, 1},
		{"int answer_index given as list", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/distribution/answer_index", ojson.Arr(ojson.Int(2))) })
		}, []string{"type_mismatch"}, 1},
		{"list answer_index given as int", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/location/answer_index", ojson.Int(2)) })
		}, []string{"type_mismatch"}, 1},
		{"non-integral size", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/comparison/left_size", ojson.Num("1.5")) })
		}, []string{"type_mismatch"}, 1},
		{"bool as string", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.set(t, AC+"/no_deformation", str("false")) }) },
			[]string{"type_mismatch"}, 1},
		{"null attributes for a lung lesion", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.set(t, AA, ojson.Null()) }) },
			[]string{"type_mismatch"}, 1},
		{"unknown field", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.set(t, A+"/detection_qa/hint", str("x")) }) },
			[]string{"unknown_field"}, 0},
		{"unknown field strict", Options{Strict: true}, func(b bench) { b.editJSON(func(tr tree) { tr.set(t, A+"/extra", ojson.Int(1)) }) },
			[]string{"unknown_field"}, 1},
		{"revision_sequential_qa is known", Options{Strict: true}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, A+"/revision_sequential_qa", parse(t, `{"steps": []}`)) })
		}, nil, 0},
		{"unexpected field", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.set(t, "/"+kLF+"/contour_qa", ojson.NewObject()) }) },
			[]string{"unexpected_field"}, 0},
		{"cardiomegaly attributes", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, H+"/attribute_extraction_qa", ojson.NewObject()) })
		}, []string{"cardiomegaly_attributes"}, 1},
		{"attribute key absent", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.del(t, H+"/attribute_extraction_qa") }) },
			[]string{"attribute_key_absent"}, 0},
		{"severity key without slash", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.rename(t, AA+"/severity~1measurement", "severity_measurement") })
		},
			[]string{"attribute_keys"}, 1},
		{"detection options", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, A+"/detection_qa/answer_options", ojson.Strs([]string{"yes", "no"})) })
		}, []string{"bad_options"}, 1},
		{"distribution options", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/distribution/answer_options/3", str("4 zones")) })
		}, []string{"bad_options"}, 1},
		{"location options", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.del(t, AA+"/location/answer_options/0") }) },
			[]string{"bad_options"}, 1},
		{"severity options", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/severity~1measurement/answer_options/3", str("more")) })
		},
			[]string{"bad_options"}, 1},
		{"comparison options", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.del(t, AA+"/comparison/answer_options/0") }) },
			[]string{"bad_options", "answer_index_out_of_range"}, 1},
		{"final option not None", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.both(t, kRR, "/4/color", str("none")) }) },
			[]string{"bad_options"}, 1},
		{"non-final null point", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.both(t, kRR, "/1/point", ojson.Null()) }) },
			[]string{"bad_options"}, 1},
		{"point of three", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.both(t, kRR, "/1/point", ojson.Ints([]int{1, 2, 3})) })
		}, []string{"bad_options"}, 1},
		{"point not ints", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.both(t, kRR, "/1/point", ojson.Arr(ojson.Num("1.5"), ojson.Int(2))) })
		}, []string{"bad_options"}, 1},
		{"too many revision options", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_revision_qa_revision_result/answer_options/4",
					parse(t, `{"type": "fake", "masks": ["default_keep"], "relative_path": "option_5_mask_fake.png"}`))
			})
		}, []string{"bad_options", "missing_image", "option_image_mismatch"}, 1},
		{"options differ", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_revision_qa_contraction/answer_options/1/point", ojson.Ints([]int{10, 10}))
			})
		}, []string{"options_differ"}, 1},
		{"unknown colour", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.both(t, kRR, "/1/color", str("crimson")) }) },
			[]string{"unknown_colour"}, 1},
		{"colour order", Options{}, func(b bench) { b.editJSON(func(tr tree) { tr.both(t, kRR, "/1/color", str("blue")) }) },
			[]string{"colour_order"}, 0},
		{"point out of bounds", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.both(t, kRR, "/1/point", ojson.Ints([]int{1024, 5})) })
		}, []string{"point_out_of_bounds"}, 1},
		{"negative point", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.both(t, kRR, "/1/point", ojson.Ints([]int{5, -1})) })
		}, []string{"point_out_of_bounds"}, 1},
		{"duplicate point", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.both(t, kRR, "/1/point", tr.get(t, AC+"/contour_revision_qa_expansion/answer_options/0/point"))
			})
		}, []string{"duplicate_point"}, 0},
		{"detection index out of range", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, "/"+kLF+"/detection_qa/answer_index", ojson.Int(3)) })
		}, []string{"answer_index_out_of_range"}, 1},
		{"point index out of range", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/contour_revision_qa_expansion/answer_index", ojson.Ints([]int{6})) })
		}, []string{"answer_index_out_of_range"}, 1},
		{"revision index out of range", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/contour_revision_qa_revision_result/answer_index", ojson.Int(0)) })
		}, []string{"answer_index_out_of_range"}, 1},
		{"empty multi-select", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/contour_revision_qa_expansion/answer_index", ojson.Ints(nil)) })
		}, []string{"multiselect_invalid"}, 1},
		{"repeated index", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/contour_revision_qa_expansion/answer_index", ojson.Ints([]int{3, 3})) })
		}, []string{"multiselect_invalid"}, 1},
		{"None with others", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/contour_revision_qa_contraction/answer_index", ojson.Ints([]int{5, 1})) })
		}, []string{"multiselect_invalid"}, 1},
		{"location not ascending", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/location/answer_index", ojson.Ints([]int{2, 1})) })
		}, []string{"multiselect_invalid"}, 1},
		{"detection answer vs index", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, "/"+kLF+"/detection_qa/answer_index", ojson.Int(1)) })
		}, []string{"answer_inconsistent"}, 1},
		{"contour eval vs no_deformation", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_eval_qa/answer", str("No"))
				tr.set(t, AC+"/contour_eval_qa/answer_index", ojson.Int(2))
			})
		}, []string{"answer_inconsistent"}, 1},
		{"point answer", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/contour_revision_qa_contraction/answer", str("red point, green point")) })
		}, []string{"answer_inconsistent"}, 1},
		{"None answer", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/contour_revision_qa_expansion/answer_index", ojson.Ints([]int{5})) })
		}, []string{"answer_inconsistent"}, 1},
		{"revision ordinal", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/contour_revision_qa_revision_result/answer", str("4rd mask")) })
		}, []string{"answer_inconsistent"}, 1},
		{"single-choice text", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/distribution/answer", str("3 zones")) })
		}, []string{"answer_inconsistent"}, 1},
		{"location text", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/location/answer", str("the left costophrenic angle")) })
		}, []string{"answer_inconsistent"}, 1},
		{"two true options", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_revision_qa_revision_result/answer_options/0/type", str("true"))
			})
		}, []string{"revision_true_option", "bad_option_path"}, 1},
		{"bad option type", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_revision_qa_revision_result/answer_options/0/type", str("maybe"))
			})
		}, []string{"revision_true_option"}, 1},
		{"empty masks", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_revision_qa_revision_result/answer_options/0/masks", ojson.Arr())
			})
		}, []string{"revision_true_option"}, 1},
		{"true option elsewhere", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_revision_qa_revision_result/answer_index", ojson.Int(3))
				tr.set(t, AC+"/contour_revision_qa_revision_result/answer", str("3rd mask"))
			})
		}, []string{"revision_true_option"}, 1},
		{"RR without revision", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				for _, q := range []string{"expansion", "contraction"} {
					tr.set(t, AC+"/contour_revision_qa_"+q+"/answer_index", ojson.Ints([]int{5}))
					tr.set(t, AC+"/contour_revision_qa_"+q+"/answer", str("None"))
				}
			})
		}, []string{"rr_without_revision"}, 0},
		{"few revision options", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.del(t, H+"/contour_qa/contour_revision_qa_revision_result/answer_options/3") })
			b.rm(hrrRev + "/option_4_mask_fake.png")
		}, []string{"few_revision_options"}, 0},
		{"severity vs ratio", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/severity~1measurement/overlap_ratio", ojson.Num("0.5")) })
		}, []string{"attribute_gt_inconsistent"}, 0},
		{"severity at exactly one third", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/severity~1measurement/overlap_ratio", ojson.Num("0.3333333333333333")) })
		}, nil, 0},
		{"comparison vs sizes", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/comparison/left_has_overlap", ojson.Bool(true)) })
		}, []string{"attribute_gt_inconsistent"}, 0},
		{"distribution vs zones", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AA+"/distribution/answer_zones/2", str("left upper zone lung")) })
		}, []string{"attribute_gt_inconsistent"}, 0},
		{"mask name", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/revision_before_masks/0", str("my_mask")) })
		}, []string{"mask_name_unrecognised"}, 0},

		// §8.4
		{"contour-eval path escapes", Options{}, func(b bench) {
			b.editJSON(func(tr tree) { tr.set(t, AC+"/contour_eval_qa/relative_path", str("../../../../etc/passwd")) })
		}, []string{"unsafe_path", "unexpected_file"}, 1},
		{"option path absolute", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_revision_qa_revision_result/answer_options/0/relative_path", str("/etc/passwd"))
			})
		}, []string{"unsafe_path", "option_image_mismatch"}, 1},
		{"unsafe path with --skip-images", Options{SkipImages: true}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_revision_qa_revision_result/answer_options/0/relative_path", str(`C:\x.png`))
			})
			b.rm(rrDir + "/detection_qa/xray.png") // not looked at
		}, []string{"unsafe_path"}, 1},
		{"option path number", Options{}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_revision_qa_revision_result/answer_options/0/relative_path", str("option_2_mask_fake.png"))
			})
		}, []string{"bad_option_path", "option_image_mismatch"}, 1},
		{"option path suffix", Options{SkipImages: true}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, H+"/contour_qa/contour_revision_qa_revision_result/answer_options/0/relative_path", str("option_1_mask_fake.png"))
			})
		}, []string{"bad_option_path"}, 1},
		{"option path in a folder", Options{SkipImages: true}, func(b bench) {
			b.editJSON(func(tr tree) {
				tr.set(t, AC+"/contour_revision_qa_revision_result/answer_options/0/relative_path", str("sub/option_1_mask_fake.png"))
			})
		}, []string{"bad_option_path"}, 1},
		{"image symlink escaping", Options{}, func(b bench) { b.symlink("/etc/passwd", rrDir+"/detection_qa/xray.png") },
			[]string{"symlink"}, 1},
		{"record folder symlink", Options{}, func(b bench) {
			b.symlink(b.path("chexpercept/"+kLF2), "chexpercept/"+kLF)
		}, []string{"symlink"}, 1},
		{"sub-folder symlink", Options{}, func(b bench) { b.symlink("/tmp", rrDir+"/contour_qa") }, []string{"symlink"}, 1},
		{"chexpercept.json symlink", Options{}, func(b bench) {
			b.write("real.json", mustRead(t, b.path("chexpercept.json")))
			b.symlink(b.path("real.json"), "chexpercept.json")
		}, []string{"symlink"}, 1},
		{"chexpercept/ symlink", Options{}, func(b bench) {
			os.Rename(b.path("chexpercept"), b.path("real"))
			b.symlink(b.path("real"), "chexpercept")
		}, []string{"symlink"}, 1},
		{"image is a directory", Options{}, func(b bench) {
			b.rm(rrDir + "/detection_qa/xray.png")
			b.mkdir(rrDir + "/detection_qa/xray.png")
		}, []string{"not_regular_file"}, 1},
		{"image is a FIFO", Options{}, func(b bench) {
			b.rm(rrDir + "/detection_qa/xray.png")
			if err := syscall.Mkfifo(b.path(rrDir+"/detection_qa/xray.png"), 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, []string{"not_regular_file"}, 1},
		{"missing folder", Options{}, func(b bench) { b.rm("chexpercept/" + kHRF) }, []string{"missing_folder"}, 1},
		{"missing image", Options{}, func(b bench) { b.rm(rrDir + "/contour_qa/contour_revision_qa/xray_with_mask_and_points.png") },
			[]string{"missing_image"}, 1},
		{"missing option image", Options{}, func(b bench) { b.rm(hrrRev + "/option_2_mask_fake.png") },
			[]string{"missing_image", "option_image_mismatch"}, 1},
		{"extra option image", Options{}, func(b bench) {
			b.write(hrrRev+"/option_5_mask_fake.png", mustRead(t, b.path(hrrRev+"/option_2_mask_fake.png")))
		}, []string{"option_image_mismatch"}, 1},
		{"option image with the other suffix", Options{}, func(b bench) {
			os.Rename(b.path(hrrRev+"/option_2_mask_fake.png"), b.path(hrrRev+"/option_2_mask_answer.png"))
		}, []string{"option_image_mismatch", "missing_image"}, 1},
		{"stray file", Options{}, func(b bench) { b.write(rrDir+"/notes.txt", []byte("x")) }, []string{"unexpected_file"}, 0},
		{"contour folder in LF", Options{}, func(b bench) { b.mkdir("chexpercept/" + kLF + "/contour_qa") }, []string{"unexpected_file"}, 0},
		{"revision folder in RF", Options{}, func(b bench) { b.mkdir("chexpercept/" + kRF + "/contour_qa/contour_revision_qa") },
			[]string{"unexpected_file"}, 0},
		{"staging leftovers", Options{}, func(b bench) {
			b.mkdir("chexpercept/.staging-123")
			b.write(rrDir+"/detection_qa/xray.png.tmp-42", []byte("x"))
		}, []string{"unexpected_file"}, 0},
		{"stray option file in an LF record", Options{}, func(b bench) {
			b.write("chexpercept/"+kLF+"/option_1_mask_answer.png", []byte("x"))
		}, []string{"unexpected_file"}, 0},
		{"stray file in chexpercept/", Options{}, func(b bench) { b.write("chexpercept/README", []byte("x")) }, []string{"unexpected_file"}, 0},
		{"root extras are out of scope", Options{Strict: true}, func(b bench) { b.mkdir("masks/x"); b.write("SHA256SUMS", nil) }, nil, 0},
		{"orphan folder", Options{}, func(b bench) { b.mkdir("chexpercept/edema_s9_negative_0/detection_qa") }, []string{"orphan_folder"}, 0},

		// §8.5
		{"not a PNG", Options{}, func(b bench) {
			b.write(rrDir+"/detection_qa/xray.png", []byte("GIF89a not really an image at all......"))
		},
			[]string{"image_decode"}, 1},
		{"empty PNG", Options{}, func(b bench) { b.write(rrDir+"/detection_qa/xray.png", nil) }, []string{"image_decode"}, 1},
		{"bad IHDR CRC", Options{}, func(b bench) {
			d := hugeHeader(1024, 1024)
			d[30] ^= 1
			b.write(rrDir+"/detection_qa/xray.png", d)
		}, []string{"image_decode"}, 1},
		{"corrupt data passes the header check", Options{}, func(b bench) {
			b.write(rrDir+"/detection_qa/xray.png", hugeHeader(1024, 1024))
		}, nil, 0},
		{"corrupt data with --deep", Options{Deep: true}, func(b bench) {
			b.write(rrDir+"/detection_qa/xray.png", hugeHeader(1024, 1024))
		}, []string{"image_decode"}, 1},
		{"50000×50000 header", Options{}, func(b bench) { b.write(rrDir+"/detection_qa/xray.png", hugeHeader(50000, 50000)) },
			[]string{"image_size"}, 1},
		{"50000×50000 header with --deep", Options{Deep: true}, func(b bench) {
			b.write(rrDir+"/detection_qa/xray.png", hugeHeader(50000, 50000))
		}, []string{"image_size"}, 1},
		{"small image", Options{Deep: true}, func(b bench) {
			b.write(rrDir+"/detection_qa/xray.png", encodePNG(t, image.NewRGBA(image.Rect(0, 0, 512, 1024))))
		}, []string{"image_size", "image_mode"}, 1},
		{"greyscale image", Options{Deep: true}, func(b bench) {
			b.write(rrDir+"/detection_qa/xray.png", encodePNG(t, image.NewGray(image.Rect(0, 0, 1024, 1024))))
		}, []string{"image_mode"}, 0},
		{"RGBA points image is accepted", Options{Deep: true, Strict: true}, func(b bench) {
			img := image.NewNRGBA(image.Rect(0, 0, 1024, 1024))
			img.Set(0, 0, color.NRGBA{1, 2, 3, 4})
			b.write(rrDir+"/contour_qa/contour_revision_qa/xray_with_mask_and_points.png", encodePNG(t, img))
		}, nil, 0},
		{"RGBA x-ray is not", Options{}, func(b bench) {
			img := image.NewNRGBA(image.Rect(0, 0, 1024, 1024))
			img.Set(0, 0, color.NRGBA{1, 2, 3, 4})
			b.write(rrDir+"/detection_qa/xray.png", encodePNG(t, img))
		}, []string{"image_mode"}, 0},

		// A distractor that shows the answer's picture.
		{"distractor is a copy of the answer, --deep", Options{Deep: true}, func(b bench) {
			rev := rrDir + "/contour_qa/contour_revision_qa/"
			b.write(rev+"option_2_mask_fake.png", mustRead(t, b.path(rev+"option_4_mask_answer.png")))
		}, []string{"identical_option_images"}, 1},
		{"distractor is a copy of the answer, headers only", Options{}, func(b bench) {
			rev := rrDir + "/contour_qa/contour_revision_qa/"
			b.write(rev+"option_2_mask_fake.png", mustRead(t, b.path(rev+"option_4_mask_answer.png")))
		}, nil, 0},
		{"distractor re-encodes the answer's pixels, --deep", Options{Deep: true}, func(b bench) {
			rev := "chexpercept/" + kHRR + "/contour_qa/contour_revision_qa/"
			img, err := png.Decode(bytes.NewReader(mustRead(t, b.path(rev+"option_1_mask_answer.png"))))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			(&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img)
			b.write(rev+"option_3_mask_fake.png", buf.Bytes())
		}, []string{"identical_option_images"}, 1},
		{"two identical distractors are not two answers", Options{Deep: true}, func(b bench) {
			rev := rrDir + "/contour_qa/contour_revision_qa/"
			b.write(rev+"option_2_mask_fake.png", mustRead(t, b.path(rev+"option_1_mask_fake.png")))
		}, nil, 0},
		// A builder's deformation_results.json (build.md §11), when present.
		{"deformation results naming their masks", Options{Strict: true}, func(b bench) { writeDeformation(b, "suboptimal_component_1_no_contraction") }, nil, 0},
		{"undeformed component's mask_path is a file path", Options{}, func(b bench) {
			writeDeformation(b, "masks/"+kRR+"/suboptimal_component_1_no_contraction.png")
		}, []string{"deformation_mask_path"}, 0},
		{"undeformed component names another mask", Options{}, func(b bench) { writeDeformation(b, "suboptimal_component_1_exp1") },
			[]string{"deformation_mask_path"}, 0},
		{"mask_path names no file", Options{Strict: true}, func(b bench) {
			writeDeformation(b, "suboptimal_component_1_no_contraction")
			b.rm("masks/" + kRR + "/suboptimal_component_0_exp1.png")
		}, []string{"deformation_mask_path"}, 1},
		{"mask file is a directory", Options{}, func(b bench) {
			writeDeformation(b, "suboptimal_component_1_no_contraction")
			b.rm("masks/" + kRR + "/suboptimal_component_1_no_contraction.png")
			b.mkdir("masks/" + kRR + "/suboptimal_component_1_no_contraction.png")
		}, []string{"deformation_mask_path"}, 0},
		{"masks folder is a link", Options{}, func(b bench) {
			writeDeformation(b, "suboptimal_component_1_no_contraction")
			b.mkdir("elsewhere")
			b.symlink(b.path("elsewhere"), "masks/"+kRR)
		}, []string{"deformation_mask_path"}, 0},
		{"mask names without masks/ under --skip-images", Options{SkipImages: true, Strict: true}, func(b bench) {
			writeDeformation(b, "suboptimal_component_1_no_contraction")
			b.rm("masks")
		}, nil, 0},
		{"file path under --skip-images", Options{SkipImages: true}, func(b bench) {
			writeDeformation(b, "masks/"+kRR+"/suboptimal_component_1_no_contraction.png")
			b.rm("masks")
		}, []string{"deformation_mask_path"}, 0},
		{"deformation results not JSON", Options{}, func(b bench) { b.write("deformation_results.json", []byte("{")) },
			[]string{"deformation_results_invalid"}, 0},
		{"deformation results without qa_deformation_results", Options{}, func(b bench) {
			b.write("deformation_results.json", []byte(`{"`+kRR+`": {}}`))
		}, []string{"deformation_results_invalid"}, 0},

		// --deep against the builder's SHA256SUMS.
		{"swapped radiographs, --deep", Options{Deep: true}, func(b bench) { sealAndSwap(t, b) }, []string{"file_changed"}, 1},
		{"swapped radiographs, headers only", Options{}, func(b bench) { sealAndSwap(t, b) }, nil, 0},
		{"chexpercept.json edited after the build, --deep", Options{Deep: true}, func(b bench) {
			if err := benchtest.WriteSums(b.dir); err != nil {
				t.Fatal(err)
			}
			b.write("chexpercept.json", append(mustRead(t, b.path("chexpercept.json")), '\n'))
		}, []string{"file_changed"}, 1},
		{"SHA256SUMS not in its format, --deep", Options{Deep: true}, func(b bench) { b.write("SHA256SUMS", []byte("xray.png\n")) },
			[]string{"file_changed"}, 1},
		{"sealed and unchanged, --deep", Options{Deep: true, Strict: true}, func(b bench) {
			if err := benchtest.WriteSums(b.dir); err != nil {
				t.Fatal(err)
			}
		}, nil, 0},
		{"no SHA256SUMS, --deep", Options{Deep: true, Strict: true}, func(b bench) {}, []string{"no_checksums"}, 0},

		// §8.6
		{"composition as a warning", Options{ExpectFull: true, Strict: true}, func(b bench) {}, []string{"composition"}, 1},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			b := bench{t, t.TempDir()}
			outdirtest.CopyTree(t, sampleDir, b.dir)
			tc.edit(b)
			rep, err := Run(context.Background(), b.dir, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			seen := map[string]bool{}
			for _, f := range rep.Findings {
				if f.Code == "composition" && !tc.opt.ExpectFull {
					if f.Severity != Info {
						t.Errorf("composition severity %s", f.Severity)
					}
					continue
				}
				if f.Code == "no_checksums" && !slices.Contains(tc.codes, f.Code) {
					continue // the sample carries no SHA256SUMS
				}
				if !seen[f.Code] {
					seen[f.Code] = true
					got = append(got, f.Code)
				}
				if strings.Contains(f.String(), "\n") {
					t.Errorf("multi-line finding %q", f.String())
				}
			}
			sort.Strings(got)
			want := append([]string(nil), tc.codes...)
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("codes %v, want %v", got, want)
				for _, f := range rep.Findings {
					t.Log(f.String())
				}
			}
			if rep.ExitCode() != tc.exit {
				t.Errorf("exit %d, want %d", rep.ExitCode(), tc.exit)
			}
		})
	}
}

// sealAndSwap writes SHA256SUMS as a build would, then swaps two
// radiographs: every file is still there and decodes.
func sealAndSwap(t *testing.T, b bench) {
	if err := benchtest.WriteSums(b.dir); err != nil {
		t.Fatal(err)
	}
	x := func(key string) string { return "chexpercept/" + key + "/detection_qa/xray.png" }
	if err := benchtest.Swap(b.dir, x("effusion_ph0002_negative_0"), x("cardiomegaly_s55123456_positive_0")); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t testing.TB, name string) []byte {
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestAllCodesCovered keeps the table honest: every code of format.md §8
// appears in some row.
func TestAllCodesCovered(t *testing.T) {
	t.Parallel()
	src := mustRead(t, "validate_test.go")
	for _, c := range AllCodes {
		if !bytes.Contains(src, []byte(`"`+c+`"}`)) && !bytes.Contains(src, []byte(`"`+c+`",`)) {
			t.Errorf("code %s has no test row", c)
		}
	}
}

func TestRunCannotRun(t *testing.T) {
	t.Parallel()
	if _, err := Run(context.Background(), filepath.Join(t.TempDir(), "absent"), Options{}); err == nil {
		t.Error("absent dir: no error")
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := Run(context.Background(), f, Options{}); err == nil {
		t.Error("file as dir: no error")
	}
}

// TestEndedContextNoVerdict: a validation whose context has ended gives
// no verdict, only the context's error.
func TestEndedContextNoVerdict(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, opt := range []Options{{}, {Deep: true}} {
		if rep, err := Run(ctx, sampleDir, opt); !errors.Is(err, context.Canceled) || rep != nil {
			t.Errorf("Run(%+v) after the end: %v, %v; want no report and context.Canceled", opt, rep, err)
		}
	}
}

func TestRootSymlinkResolved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outdirtest.CopyTree(t, sampleDir, filepath.Join(dir, "real"))
	os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link"))
	rep, err := Run(context.Background(), filepath.Join(dir, "link"), Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("root link: %v %+v", err, rep)
	}
}

// TestOutput pins the line formats and the summary figures.
func TestOutput(t *testing.T) {
	t.Parallel()
	b := bench{t, t.TempDir()}
	outdirtest.CopyTree(t, sampleDir, b.dir)
	b.editJSON(func(tr tree) {
		tr.rename(t, "/"+kRR+"/attribute_extraction_qa/severity~1measurement", "severity/measurement ")
	})
	rep, err := Run(context.Background(), b.dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text, jl bytes.Buffer
	rep.WriteText(&text)
	rep.WriteJSONLines(&jl)
	wantLine := "E attribute_keys " + kRR + " /" + kRR + "/attribute_extraction_qa/severity~1measurement attribute object lacks \"severity/measurement\"\n"
	if !strings.HasPrefix(text.String(), wantLine) {
		t.Errorf("text starts %q, want %q", text.String()[:min(200, text.Len())], wantLine)
	}
	wantJSON := `{"severity":"E","code":"attribute_keys","key_id":"` + kRR + `","location":"/` + kRR + `/attribute_extraction_qa/severity~1measurement","message":"attribute object lacks \"severity/measurement\""}` + "\n"
	if !strings.HasPrefix(jl.String(), wantJSON) {
		t.Errorf("json starts %q", jl.String()[:min(300, jl.Len())])
	}
	if !strings.Contains(jl.String(), `"code":"composition","key_id":null`) {
		t.Error("composition line lacks key_id null")
	}
	sum, _ := benchdir.SHA256File(b.path("chexpercept.json"))
	for _, want := range []string{"questions: 33 ", "expected model calls: 33\n", "images required: 27\n",
		"cardiomegaly        0      1      1      2\n", "total               2      2      3      7\n",
		"sha256(chexpercept.json): " + sum + "\n", "result: FAIL, 2 errors, 0 warnings, 1 information\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, text.String())
		}
	}
}

// TestDeterministic checks that the findings do not depend on the number
// of workers.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	b := bench{t, t.TempDir()}
	outdirtest.CopyTree(t, sampleDir, b.dir)
	b.rm(rrDir + "/detection_qa/xray.png")
	b.rm("chexpercept/" + kLF)
	b.write(hrrRev+"/option_9_mask_fake.png", nil)
	b.mkdir("chexpercept/zz_orphan")
	b.mkdir("chexpercept/aa_orphan")
	var outs []string
	for _, w := range []int{1, 2, 8} {
		rep, err := Run(context.Background(), b.dir, Options{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		rep.WriteText(&buf)
		outs = append(outs, buf.String())
	}
	if outs[0] != outs[1] || outs[0] != outs[2] {
		t.Errorf("output depends on workers:\n%s\n---\n%s", outs[0], outs[2])
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	if _, err := Check(context.Background(), sampleDir); err != nil {
		t.Errorf("Check(sample): %v", err)
	}
	b := bench{t, t.TempDir()}
	outdirtest.CopyTree(t, sampleDir, b.dir)
	b.rm(rrDir + "/detection_qa/xray.png")
	if _, err := Check(context.Background(), b.dir); err == nil || !strings.Contains(err.Error(), "missing_image") {
		t.Errorf("Check(broken) = %v", err)
	}
}

// TestIdenticalOptionImages builds a benchmark with benchtest (every image
// distinct) and makes one distractor of an RR record a copy of the answer:
// --deep reports exactly that option, naming both positions.
func TestIdenticalOptionImages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recs := benchtest.Sample()
	if err := benchtest.Write(dir, recs, true); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), dir, Options{Deep: true})
	if err != nil || rep.Has("identical_option_images") {
		t.Fatalf("distinct images: err %v, findings %v", err, rep.Findings)
	}
	var rec *benchmark.Record
	for _, r := range recs {
		if r.Path() == benchmark.RevisionRequired {
			rec = r
			break
		}
	}
	opts := rec.Contour.RevisionResult.AnswerOptions
	ans := rec.Contour.RevisionResult.AnswerIndex
	fake := 1
	if fake == ans {
		fake = 2
	}
	rev := filepath.Join(dir, benchmark.ImagesDir, rec.KeyID, filepath.FromSlash(benchmark.RevisionDir))
	data := mustRead(t, filepath.Join(rev, opts[ans-1].RelativePath))
	if err := os.WriteFile(filepath.Join(rev, opts[fake-1].RelativePath), data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Run(context.Background(), dir, Options{Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []Finding
	for _, f := range rep.Findings {
		if f.Code == "identical_option_images" {
			got = append(got, f)
		}
	}
	wantLoc := benchmark.ImagesDir + "/" + rec.KeyID + "/" + benchmark.RevisionDir + "/" + opts[fake-1].RelativePath
	wantMsg := "distractor option " + strconv.Itoa(fake) + " is a byte-identical copy of the answer's image (option " + strconv.Itoa(ans) + ")"
	if len(got) != 1 || got[0].Severity != Error || got[0].KeyID != rec.KeyID || got[0].Location != wantLoc ||
		!strings.HasPrefix(got[0].Message, wantMsg) {
		t.Fatalf("findings %v, want one error at %s: %s…", got, wantLoc, wantMsg)
	}
	if rep.ExitCode() != 1 {
		t.Errorf("exit %d, want 1", rep.ExitCode())
	}
}

// TestTransientReadIsNoFinding: an image that cannot be opened for a
// passing reason (too many open files, an I/O error) makes Run fail
// with that error, naming the file, instead of reporting the benchmark as
// invalid; an image that is missing or refused is a finding as before.
func TestTransientReadIsNoFinding(t *testing.T) {
	for _, tc := range []struct {
		errno     syscall.Errno
		transient bool
	}{
		{syscall.EMFILE, true},
		{syscall.ENFILE, true},
		{syscall.EIO, true},
		{syscall.EACCES, false},
	} {
		t.Run(tc.errno.Error(), func(t *testing.T) {
			var n atomic.Int64
			openImage = func(name string, l safefile.Links) (*os.File, error) {
				if n.Add(1) == 2 {
					return nil, &fs.PathError{Op: "open", Path: name, Err: tc.errno}
				}
				return safefile.Open(name, l)
			}
			t.Cleanup(func() { openImage = safefile.Open })
			rep, err := Check(context.Background(), sampleDir)
			if tc.transient {
				if err == nil || !errors.Is(err, tc.errno) || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cannot read chexpercept/") {
					t.Fatalf("Check: %v, want the %v naming the file, not ErrInvalid", err, tc.errno)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || rep == nil || !rep.Has("image_decode") {
				t.Fatalf("Check: %v, want an image_decode finding", err)
			}
		})
	}
}
