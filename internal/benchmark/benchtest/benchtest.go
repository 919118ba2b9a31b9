// Package benchtest builds small, valid synthetic benchmarks for tests and
// Go benchmarks: records of all four shapes (LF, RF, RR, cardiomegaly RR)
// with consistent answers, and 1024×1024 8-bit RGB PNGs for every image
// the format requires. Question texts are our own wording.
package benchtest

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chexpercept/chexpercept/internal/benchdir"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/render"
)

// Question formats a question per format.md §3.6: instruction, blank
// line, "Options:", then "(k) text" lines, no trailing newline.
func Question(instruction string, options []string) string {
	var b strings.Builder
	b.WriteString(instruction)
	b.WriteString("\n\nOptions:")
	for i, o := range options {
		fmt.Fprintf(&b, "\n(%d) %s", i+1, o)
	}
	return b.String()
}

func str(s string) *string { return &s }

// LF returns a lesion-free record for lesion and the negative pair id.
func LF(lesion, pairID string, dicom *string) *benchmark.Record {
	return &benchmark.Record{
		KeyID:     lesion + "_" + pairID,
		Lesion:    lesion,
		Detection: detection(lesion, false),
		PairID:    pairID,
		DicomID:   dicom,
	}
}

func detection(lesion string, yes bool) benchmark.YesNoQA {
	q := benchmark.YesNoQA{
		Question:      Question("Look at this frontal chest radiograph. Is "+lesion+" visible anywhere in it?", benchmark.YesNo),
		AnswerOptions: []string{"Yes", "No"},
		Answer:        "No",
		AnswerIndex:   2,
	}
	if yes {
		q.Answer, q.AnswerIndex = "Yes", 1
	}
	return q
}

// Positive returns an RF (rr false) or RR (rr true) record. Variant v
// varies the point coordinates and the position of the true revision
// option so that records differ.
func Positive(lesion, pairID string, dicom *string, rr bool, v int) *benchmark.Record {
	r := &benchmark.Record{
		KeyID:     lesion + "_" + pairID,
		Lesion:    lesion,
		Detection: detection(lesion, true),
		PairID:    pairID,
		DicomID:   dicom,
	}
	r.Contour = contour(lesion, rr, v)
	if lesion == "cardiomegaly" {
		r.AttributesNull = true
	} else {
		r.Attributes = attributes(lesion, v)
	}
	return r
}

func pointOptions(v int) ([]benchmark.PointOption, []string) {
	pts := [][2]int{{301 + v%50, 688}, {455, 300 + v%40}, {212, 540}, {390, 812 - v%30}}
	var opts []benchmark.PointOption
	var texts []string
	for i := range pts {
		p := pts[i]
		c := render.PaletteName(i + 1)
		opts = append(opts, benchmark.PointOption{Point: &p, Color: c})
		texts = append(texts, c+" point")
	}
	opts = append(opts, benchmark.PointOption{Color: benchmark.NoneOption})
	texts = append(texts, benchmark.NoneOption)
	return opts, texts
}

func contour(lesion string, rr bool, v int) *benchmark.ContourQA {
	evalQ := benchmark.YesNoQA{
		Question:      Question("The cyan overlay marks the "+lesion+" region. Does this outline need any correction?", benchmark.YesNo),
		AnswerOptions: []string{"Yes", "No"},
		Answer:        "No",
		AnswerIndex:   2,
	}
	if rr {
		evalQ.Answer, evalQ.AnswerIndex = "Yes", 1
	}
	expOpts, texts := pointOptions(v)
	conOpts, _ := pointOptions(v)
	trueAt := v%4 + 1
	fakes := []string{"suboptimal_component_0_exp1", "suboptimal_component_0_cont1_fake_expansion_1", "default_keep"}
	var revOpts []benchmark.RevisionOption
	fi := 0
	var ords []string
	for k := 1; k <= 4; k++ {
		ords = append(ords, benchmark.OrdinalMask(k))
		if k == trueAt {
			revOpts = append(revOpts, benchmark.RevisionOption{Type: "true", Masks: []string{"optimal_component_0"},
				RelativePath: fmt.Sprintf("option_%d_mask_answer.png", k)})
			continue
		}
		revOpts = append(revOpts, benchmark.RevisionOption{Type: "fake", Masks: []string{fakes[fi]},
			RelativePath: fmt.Sprintf("option_%d_mask_fake.png", k)})
		fi++
	}
	c := &benchmark.ContourQA{
		NoDeformation:       !rr,
		InitialContext:      "Coloured dots are drawn on the image. Each dot is a candidate spot where the outline might have to grow or shrink.",
		RevisionBeforeMasks: []string{"suboptimal_component_0_cont1"},
		RevisionAfterMasks:  []string{"optimal_component_0"},
		TrueMasks:           benchmark.NamedMasks{{Component: "suboptimal_component_0", Masks: []string{"optimal_component_0"}}},
		FakeMasks: benchmark.NamedMasks{{Component: "suboptimal_component_0", Masks: []string{
			"suboptimal_component_0_exp1_fake_contraction_1", "suboptimal_component_0_exp1",
			"suboptimal_component_0_cont1_fake_expansion_1", "suboptimal_component_0_cont1"}}},
		TrueCombination:  []string{"optimal_component_0"},
		FakeCombinations: [][]string{{fakes[0]}, {fakes[1]}, {fakes[2]}},
		ContourEval:      benchmark.ContourEvalQA{YesNoQA: evalQ, RelativePath: benchmark.ContourEvalRelPath},
		Expansion: benchmark.PointQA{
			Question:      Question("Which coloured dots lie where the outline should be enlarged to cover the "+lesion+"? Pick every one that applies.", texts),
			AnswerOptions: expOpts, Answer: "yellow point", AnswerIndex: []int{3},
		},
		Contraction: benchmark.PointQA{
			Question:      Question("Which coloured dots lie where the outline should be pulled back because it covers too much? Pick every one that applies.", texts),
			AnswerOptions: conOpts, Answer: "green point, red point", AnswerIndex: []int{4, 1},
		},
		RevisionResult: benchmark.RevisionQA{
			Question:      Question("Each of the following images shows a candidate outline. Which one applies the corrections correctly?", ords),
			AnswerOptions: revOpts, Answer: benchmark.OrdinalMask(trueAt), AnswerIndex: trueAt,
		},
	}
	return c
}

var (
	sevOpts = []string{"less than one third of the right lung", "between one third and two thirds of the right lung", "at least two thirds of the right lung"}
	cmpOpts = []string{"about the same in both lungs", "larger in the left lung", "larger in the right lung", "present in one lung only"}
	locOpts = []string{"the left costophrenic angle", "the intersection of the right lateral lung and the right mid zone lung",
		"the intersection of the left medial lung and the left upper zone lung", benchmark.LocationNone}
)

func attributes(lesion string, v int) *benchmark.AttributeQA {
	zones := []string{"right mid zone lung", "right lower zone lung"}
	return &benchmark.AttributeQA{
		Distribution: benchmark.DistributionQA{
			Question:      Question("How many lung zones does the "+lesion+" involve?", benchmark.DistributionOptions),
			AnswerOptions: append([]string(nil), benchmark.DistributionOptions...),
			Answer:        "2 zones", AnswerIndex: 2, AnswerZones: zones,
		},
		Location: benchmark.LocationQA{
			Question:      Question("Where is the "+lesion+"? Pick every region that applies.", locOpts),
			AnswerOptions: append([]string(nil), locOpts...),
			Answer:        locOpts[1], AnswerIndex: []int{2}, AnswerZones: []string{locOpts[1]},
		},
		Severity: benchmark.SeverityQA{
			Question:      Question("What share of the right lung does the "+lesion+" occupy?", sevOpts),
			AnswerOptions: append([]string(nil), sevOpts...),
			Answer:        sevOpts[0], AnswerIndex: 1, OverlapRatio: []string{"0.184", "0", "0.05", "1e-05"}[v%4], SelectedLung: "right lung",
		},
		Comparison: benchmark.ComparisonQA{
			Question:      Question("Compare how much of each lung the "+lesion+" covers.", cmpOpts),
			AnswerOptions: append([]string(nil), cmpOpts...),
			Answer:        cmpOpts[3], AnswerIndex: 4, LeftSize: 0, RightSize: 48211 + v, RightHasOverlap: true,
		},
	}
}

// Sample returns the hand-made sample benchmark: one record of each of the
// four shapes (LF, RF, RR, cardiomegaly RR) plus a cardiomegaly RF, an LF
// with a null dicom_id and a non-MIMIC (phantom) RR record.
func Sample() []*benchmark.Record {
	d := func(s string) *string { return str(s) }
	return []*benchmark.Record{
		LF("edema", "s50414267_negative_3", d("1f2e3d4c-a1a1a1a1-b2b2b2b2-c3c3c3c3-d4d4d4d4")),
		LF("effusion", "ph0002_negative_0", nil),
		Positive("pneumonia", "s57001234_positive_0", d("7a6b5c4d-e5e5e5e5-f6f6f6f6-01010101-23232323"), false, 1),
		Positive("atelectasis", "s56543210_positive_1", d("0c0d0e0f-12121212-34343434-56565656-78787878"), true, 3),
		Positive("cardiomegaly", "s55123456_positive_0", d("9e8d7c6b-abababab-cdcdcdcd-efefefef-10101010"), true, 0),
		Positive("cardiomegaly", "s55123457_positive_0", d("9e8d7c6b-abababab-cdcdcdcd-efefefef-10101011"), false, 2),
		Positive("opacity", "ph0007_positive_0", d("ph0007-img"), true, 6),
	}
}

// Full returns a benchmark of the released composition scaled by n:
// n LF, n RF and n RR records per lesion (n = 100 gives 2,100 records and
// 10,400 questions).
func Full(n int) []*benchmark.Record {
	var out []*benchmark.Record
	id := 0
	dicom := func() *string {
		id++
		return str(fmt.Sprintf("%08x-%08x-%08x-%08x-%08x", id, id*7, id*13, id*17, id*19))
	}
	for _, l := range benchmark.DefaultLesions().Names() {
		for i := 0; i < n; i++ {
			out = append(out, LF(l, fmt.Sprintf("s%08d_negative_0", 50000000+i), dicom()))
		}
		for i := 0; i < n; i++ {
			out = append(out, Positive(l, fmt.Sprintf("s%08d_positive_0", 51000000+i), dicom(), false, i))
			out = append(out, Positive(l, fmt.Sprintf("s%08d_positive_0", 52000000+i), dicom(), true, i))
		}
	}
	return out
}

var (
	pngOnce sync.Once
	pngRGB  []byte
	pngRGBA []byte
)

// FlatPNG returns a 1024×1024 8-bit PNG of uniform grey: RGB when rgba is
// false, RGBA (alpha 255 everywhere, the reference's points image) when
// true. The bytes are encoded once and shared.
func FlatPNG(rgba bool) []byte {
	pngOnce.Do(func() {
		pngRGB = encodeFlat(false)
		pngRGBA = encodeFlat(true)
	})
	if rgba {
		return pngRGBA
	}
	return pngRGB
}

func encodeFlat(rgba bool) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 1024, 1024))
	a := uint8(255)
	if rgba {
		a = 254 // not opaque, so image/png keeps the alpha channel
	}
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = 96, 96, 96, a
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		panic(err) // encoding an in-memory image cannot fail
	}
	return b.Bytes()
}

// PatternPNG encodes a 1024×1024 8-bit RGB image with a simple pattern
// that depends on seed, so fixture images are not all identical.
func PatternPNG(seed int) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, 1024, 1024))
	for y := 0; y < 1024; y++ {
		for x := 0; x < 1024; x++ {
			g := uint8(40 + ((x/128 + y/128 + seed) % 4 * 40))
			img.SetRGBA(x, y, color.RGBA{g, g, g, 255})
		}
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ImagePaths lists the images a record must have, relative to
// chexpercept/<key_id>/ (format.md §1).
func ImagePaths(r *benchmark.Record) []string {
	paths := []string{benchmark.XrayRel}
	switch r.Path() {
	case benchmark.RevisionFree:
		paths = append(paths, "contour_qa/"+benchmark.ContourEvalRelPath)
	case benchmark.RevisionRequired:
		paths = append(paths, "contour_qa/"+benchmark.ContourEvalRelPath, benchmark.PointsRel)
		for _, o := range r.Contour.RevisionResult.AnswerOptions {
			paths = append(paths, benchmark.RevisionDir+"/"+o.RelativePath)
		}
	}
	return paths
}

// Write writes chexpercept.json and every required image under dir. With
// pattern false every image is the shared flat PNG (fast, for large
// benchmarks); with pattern true each image gets a distinct pattern.
func Write(dir string, recs []*benchmark.Record, pattern bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := benchdir.WriteJSON(nil, dir, recs); err != nil {
		return err
	}
	n := 0
	for _, r := range recs {
		for _, rel := range ImagePaths(r) {
			name := filepath.Join(dir, benchmark.ImagesDir, r.KeyID, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			data := FlatPNG(false)
			if pattern {
				var err error
				if data, err = PatternPNG(n); err != nil {
					return err
				}
			}
			n++
			if err := os.WriteFile(name, data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteSums writes dir/SHA256SUMS over every regular file below dir, as a
// build writes it (sorted paths, `<hex>  <path>` lines).
func WriteSums(dir string) error {
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == benchdir.SumsFileName {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", benchmark.SHA256Hex(data), filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, benchdir.SumsFileName), []byte(b.String()), 0o644)
}

// Swap exchanges the contents of two files below dir (paths relative to
// dir, with /): a benchmark changed without any file going missing.
func Swap(dir, a, b string) error {
	pa, pb := filepath.Join(dir, filepath.FromSlash(a)), filepath.Join(dir, filepath.FromSlash(b))
	da, err := os.ReadFile(pa)
	if err != nil {
		return err
	}
	db, err := os.ReadFile(pb)
	if err != nil {
		return err
	}
	if bytes.Equal(da, db) {
		return fmt.Errorf("%s and %s have the same bytes: swapping them changes nothing", a, b)
	}
	if err := os.WriteFile(pa, db, 0o644); err != nil {
		return err
	}
	return os.WriteFile(pb, da, 0o644)
}
