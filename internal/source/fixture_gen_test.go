package source

// This file generates testdata/mimic, a tiny synthetic MIMIC-layout tree
// (no real data): run
//
//	go test ./internal/source -run TestGenerateMIMICFixture -update-fixture
//
// and commit the result. Shapes are defined in normalised coordinates
// (u = x/W, v = y/H) and rasterised at each file's own size, so the
// CheXmask rows (native size), the 512² MIMIC-ILS masks and the CXRs agree.

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/mask"
)

var updateFixture = flag.Bool("update-fixture", false, "regenerate testdata/mimic")

// Native size of every synthetic CXR (non-square, larger than 1024).
const fxW, fxH = 1200, 1000

type ell struct{ cu, cv, au, av float64 }

func (e ell) in(u, v float64) bool {
	du, dv := (u-e.cu)/e.au, (v-e.cv)/e.av
	return du*du+dv*dv <= 1
}

func (e ell) shift(du, dv float64) ell { return ell{e.cu + du, e.cv + dv, e.au, e.av} }

// anatomyFx is one synthetic chest: lungs are ellipses minus the heart, so
// the heart touches both lungs.
type anatomyFx struct{ right, left, heart ell }

func newAnatomy(du, dv float64) anatomyFx {
	return anatomyFx{
		right: ell{0.333, 0.48, 0.142, 0.30}.shift(du, dv),
		left:  ell{0.667, 0.48, 0.133, 0.30}.shift(du, dv),
		heart: ell{0.504, 0.68, 0.092, 0.14}.shift(du, dv),
	}
}

func (a anatomyFx) part(name string, u, v float64) bool {
	switch name {
	case "right":
		return a.right.in(u, v) && !a.heart.in(u, v)
	case "left":
		return a.left.in(u, v) && !a.heart.in(u, v)
	}
	return a.heart.in(u, v)
}

// raster samples pred at pixel centres of a w×h grid.
func raster(w, h int, pred func(u, v float64) bool) mask.Mask {
	m := mask.New(w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if pred((float64(x)+0.5)/float64(w), (float64(y)+0.5)/float64(h)) {
				m.Pix[y*w+x] = 1
			}
		}
	}
	return m
}

// lesionFx is a lesion drawn as ellipses clipped to the lungs (or the
// heart itself for cardiomegaly).
type lesionFx struct {
	target string
	blobs  []ell
	heart  bool
}

func (l lesionFx) pred(a anatomyFx) func(u, v float64) bool {
	return func(u, v float64) bool {
		if l.heart {
			return ell{a.heart.cu, a.heart.cv, a.heart.au * 1.08, a.heart.av * 1.05}.in(u, v)
		}
		for _, b := range l.blobs {
			if b.in(u, v) && (a.part("right", u, v) || a.part("left", u, v)) {
				return true
			}
		}
		return false
	}
}

func cxr(a anatomyFx, lesions []lesionFx, seed float64) *image.Gray {
	g := image.NewGray(image.Rect(0, 0, fxW, fxH))
	preds := make([]func(u, v float64) bool, len(lesions))
	for i, l := range lesions {
		preds[i] = l.pred(a)
	}
	for y := 0; y < fxH; y++ {
		for x := 0; x < fxW; x++ {
			u, v := (float64(x)+0.5)/fxW, (float64(y)+0.5)/fxH
			val := 25.0
			if math.Abs(u-0.5) < 0.44 {
				val = 165 - 50*math.Abs(u-0.5)
			}
			switch {
			case a.part("heart", u, v):
				val = 205
			case a.part("right", u, v) || a.part("left", u, v):
				val = 70 + 8*math.Sin(40*u+seed)*math.Sin(33*v+2*seed)
			}
			for i, l := range lesions {
				if !l.heart && preds[i](u, v) {
					val += 55
				}
			}
			val += 6 * math.Sin(7*u+3*v+seed)
			g.Pix[y*fxW+x] = uint8(math.Max(0, math.Min(255, math.Round(val))))
		}
	}
	return g
}

type pairFx struct {
	id, typ, target string
	lesion          int    // index into study lesions; -1 = none
	mask            string // "" = seg_mask_path null; "absent" = path to a missing file
	location        []string
}

type studyFx struct {
	subject, study, dicom string
	du, dv                float64
	lesions               []lesionFx
	pos, neg              []pairFx
	chexmask              string // "rle", "landmarks", "mismatch"
}

func fixtureStudies() []studyFx {
	return []studyFx{
		{
			subject: "p10000001", study: "s50000001", dicom: "0a1b2c3d-10000001-20000001-30000001-40000001",
			lesions: []lesionFx{
				{target: "cardiomegaly", heart: true},
				{target: "effusion", blobs: []ell{{0.32, 0.74, 0.16, 0.09}}},
				{target: "atelectasis", blobs: []ell{{0.68, 0.60, 0.05, 0.065}}},
			},
			pos: []pairFx{
				{id: "s50000001_positive_0", typ: "global", target: "cardiomegaly", lesion: 0, location: []string{"heart"}},
				{id: "s50000001_positive_1", typ: "global", target: "effusion", lesion: 1, location: []string{"right lung base"}},
				{id: "s50000001_positive_2", typ: "global", target: "effusion", lesion: 1}, // duplicate positive
				{id: "s50000001_positive_3", typ: "basic", target: "atelectasis", lesion: 2, location: []string{"left lower lobe"}},
				{id: "s50000001_positive_4", typ: "basic", target: "atelectasis", lesion: 2}, // second basic: ignored
				{id: "s50000001_positive_5", typ: "lesion_inference", target: "pneumonia", lesion: 2},
			},
			neg: []pairFx{
				{id: "s50000001_negative_6", typ: "global", target: "edema", lesion: -1},
				{id: "s50000001_negative_7", typ: "basic", target: "pneumonia", lesion: -1}, // basic negative: ignored
			},
			chexmask: "rle",
		},
		{
			subject: "p10000002", study: "s50000002", dicom: "1b2c3d4e-10000002-20000002-30000002-40000002",
			du: 0.01, dv: -0.01,
			lesions: []lesionFx{
				{target: "consolidation", blobs: []ell{{0.67, 0.40, 0.06, 0.08}}},
				{target: "opacity", blobs: []ell{{0.33, 0.35, 0.05, 0.06}}},
			},
			pos: []pairFx{
				{id: "s50000002_positive_0", typ: "global", target: "opacity", lesion: 1, mask: "null"}, // no mask
				{id: "s50000002_positive_1", typ: "global", target: "consolidation", lesion: 0, location: []string{"left upper lobe"}},
				{id: "s50000002_positive_2", typ: "global", target: "pneumonia", lesion: 1, mask: "absent"}, // mask file missing
			},
			neg: []pairFx{
				{id: "s50000002_negative_3", typ: "global", target: "cardiomegaly", lesion: -1},
				{id: "s50000002_negative_4", typ: "global", target: "effusion", lesion: -1},
				{id: "s50000002_negative_5", typ: "global", target: "edema", lesion: -1},
			},
			chexmask: "rle",
		},
		{
			subject: "p10000003", study: "s50000003", dicom: "2c3d4e5f-10000003-20000003-30000003-40000003",
			du: -0.01, dv: 0.01,
			lesions: []lesionFx{
				{target: "edema", blobs: []ell{{0.36, 0.45, 0.06, 0.12}, {0.64, 0.45, 0.06, 0.12}}},
				{target: "opacity", blobs: []ell{{0.30, 0.56, 0.06, 0.07}}},
			},
			pos: []pairFx{
				{id: "s50000003_positive_0", typ: "global", target: "edema", lesion: 0, location: []string{"bilateral"}},
				{id: "s50000003_positive_1", typ: "global", target: "opacity", lesion: 1},
			},
			neg: []pairFx{
				{id: "s50000003_negative_2", typ: "global", target: "consolidation", lesion: -1},
				{id: "s50000003_negative_3", typ: "global", target: "atelectasis", lesion: -1},
			},
			chexmask: "landmarks",
		},
		{
			subject: "p10000004", study: "s50000004", dicom: "3d4e5f60-10000004-20000004-30000004-40000004",
			lesions: []lesionFx{
				{target: "pneumonia", blobs: []ell{{0.30, 0.55, 0.06, 0.07}}},
			},
			pos: []pairFx{
				{id: "s50000004_positive_0", typ: "global", target: "pneumonia", lesion: 0},
			},
			neg: []pairFx{
				{id: "s50000004_negative_1", typ: "global", target: "cardiomegaly", lesion: -1},
				{id: "s50000004_negative_2", typ: "global", target: "edema", lesion: -1}, // image reused: one negative per CXR
			},
			chexmask: "mismatch",
		},
		{
			subject: "p11000005", study: "s50000005", dicom: "4e5f6071-11000005-20000005-30000005-40000005",
			du: 0.005, dv: 0.005,
			lesions: []lesionFx{
				{target: "atelectasis", blobs: []ell{{0.34, 0.66, 0.05, 0.06}}},
				{target: "pneumonia", blobs: []ell{{0.66, 0.50, 0.06, 0.07}}},
			},
			pos: []pairFx{
				{id: "s50000005_positive_0", typ: "global", target: "atelectasis", lesion: 0, location: []string{"right lower lobe"}},
				{id: "s50000005_positive_1", typ: "basic", target: "atelectasis", lesion: 0}, // a global exists: basic ignored
				{id: "s50000005_positive_2", typ: "basic", target: "pneumonia", lesion: 1},
			},
			neg: []pairFx{
				{id: "s50000005_negative_3", typ: "global", target: "effusion", lesion: -1},
				{id: "s50000005_negative_4", typ: "global", target: "opacity", lesion: -1},
			},
			chexmask: "rle",
		},
	}
}

// landmarkCell writes 44 right-lung, 50 left-lung and 40 heart points on
// the ellipse outlines, as a bracketed array with decimals.
func landmarkCell(a anatomyFx) string {
	var parts []string
	add := func(e ell, n int) {
		for i := 0; i < n; i++ {
			t := 2 * math.Pi * float64(i) / float64(n)
			x := (e.cu + e.au*math.Cos(t)) * fxW
			y := (e.cv + e.av*math.Sin(t)) * fxH
			parts = append(parts, fmt.Sprintf("[%.1f, %.1f]", x, y))
		}
	}
	add(ell{a.right.cu, a.right.cv, a.right.au * 0.97, a.right.av * 0.97}, 44)
	add(ell{a.left.cu, a.left.cv, a.left.au * 0.97, a.left.av * 0.97}, 50)
	add(a.heart, 40)
	return "[" + strings.Join(parts, ", ") + "]"
}

func TestGenerateMIMICFixture(t *testing.T) {
	if !*updateFixture {
		t.Skip("run with -update-fixture to regenerate testdata/mimic")
	}
	root := filepath.Join("testdata", "mimic")
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	write := func(rel string, data []byte) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var csvBuf bytes.Buffer
	cw := csv.NewWriter(&csvBuf)
	cw.Write([]string{"dicom_id", "Dice RCA (Max)", "Dice RCA (Mean)", "Landmarks", "Left Lung", "Right Lung", "Heart", "Height", "Width"})
	train := map[string]any{}
	var studyOrder []string
	for si, s := range fixtureStudies() {
		a := newAnatomy(s.du, s.dv)
		img := cxr(a, s.lesions, float64(si))
		var jb bytes.Buffer
		if err := jpeg.Encode(&jb, img, &jpeg.Options{Quality: 70}); err != nil {
			t.Fatal(err)
		}
		imgRel := fmt.Sprintf("%s/%s/%s/%s.jpg", s.subject[:3], s.subject, s.study, s.dicom)
		write("files/"+imgRel, jb.Bytes())
		// 512² lesion masks, one file per lesion of the study.
		maskRel := make([]string, len(s.lesions))
		for i, l := range s.lesions {
			m := raster(512, 512, l.pred(a))
			var mb bytes.Buffer
			if err := mask.EncodePNG(&mb, m); err != nil {
				t.Fatal(err)
			}
			maskRel[i] = fmt.Sprintf("%s/%s_%s_%d.png", s.study, s.study, l.target, i)
			write("lesion_mask/"+maskRel[i], mb.Bytes())
		}
		pairs := func(ps []pairFx, positive bool) []any {
			out := []any{}
			for _, p := range ps {
				o := map[string]any{
					"pair_id": p.id, "instruction": "Outline the " + p.target + " if present.",
					"type": p.typ, "target": p.target, "sent_idx": fmt.Sprint(len(out)), "seg": positive,
				}
				if positive {
					o["answer"] = "[SEG]"
				} else {
					o["answer"] = "[SEG] No " + p.target + " is seen."
				}
				if p.location != nil {
					o["location"] = p.location
				}
				switch {
				case !positive || p.mask == "null":
					o["seg_mask_path"] = nil
				case p.mask == "absent":
					o["seg_mask_path"] = s.study + "/missing_mask.png"
				default:
					o["seg_mask_path"] = maskRel[p.lesion]
				}
				out = append(out, o)
			}
			return out
		}
		train[s.study] = map[string]any{
			"subject_id": s.subject, "dicom_id": s.dicom, "image_path": imgRel,
			"section_name": "findings", "section_content": "Synthetic report text for " + s.study + ".",
			"instruction_answer_pairs": map[string]any{
				"positive_pairs": pairs(s.pos, true),
				"negative_pairs": pairs(s.neg, false),
			},
		}
		studyOrder = append(studyOrder, s.study)
		// CheXmask row at the native size.
		w, h := fxW, fxH
		if s.chexmask == "mismatch" {
			w, h = 1024, 1024
		}
		rle := func(part string) string {
			return mask.EncodeRLE(raster(w, h, func(u, v float64) bool { return a.part(part, u, v) }))
		}
		right, left, heart := rle("right"), rle("left"), rle("heart")
		lm := landmarkCell(a)
		if s.chexmask == "landmarks" {
			right, left = "", ""
		} else {
			lm = strings.NewReplacer("[", "", "]", "", " ", "").Replace(lm) // x,y,x,y form
		}
		cw.Write([]string{s.dicom, "0.91", "0.87", lm, left, right, heart, fmt.Sprint(h), fmt.Sprint(w)})
		if si == 0 { // a later duplicate row: first row wins
			cw.Write([]string{s.dicom, "0.1", "0.1", "", "1 5", "1 5", "", fmt.Sprint(h), fmt.Sprint(w)})
		}
	}
	cw.Write([]string{"ffffffff-00000000-00000000-00000000-00000000", "0.5", "0.5", "", "", "", "", "10", "10"})
	cw.Flush()
	write("chexmask_mimic.csv", csvBuf.Bytes())
	write("mimic_ils_instruction_answer.json", ilsJSON(studyOrder, train))
}

// ilsJSON writes the documented structure with studies in our order (Go
// maps would sort them) and a non-empty "val" split that must be skipped.
func ilsJSON(order []string, train map[string]any) []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"val\": {\"s59999999\": {\"dicom_id\": \"x\", \"instruction_answer_pairs\": {\"positive_pairs\": [], \"negative_pairs\": []}}},\n  \"train\": {\n")
	for i, s := range order {
		data := mustJSON(train[s])
		fmt.Fprintf(&b, "    %q: %s", s, data)
		if i < len(order)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  },\n  \"test\": {}\n}\n")
	return b.Bytes()
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}
