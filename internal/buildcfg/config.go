// Package buildcfg is the configuration of `chexpercept sample` and
// `chexpercept build` (spec build.md §2.5): every key with its default,
// loaded from a YAML file in which unknown keys and wrongly typed values are
// errors. Command-line flags override the file; the file overrides the
// defaults.
//
// Keys marked FP in the spec change a case's result and enter the case
// fingerprint; FingerprintKeys lists them.
package buildcfg

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/textsafe"
	"github.com/chexpercept/chexpercept/internal/yamlerr"
)

// Config holds every configurable key. YAML names are the spec's keys.
type Config struct {
	Seed    uint64   `yaml:"seed" json:"seed"`
	Workers int      `yaml:"workers" json:"-"`
	Lesions []string `yaml:"lesions" json:"lesions"`

	MimicLayout      string  `yaml:"mimic_layout" json:"mimic_layout"`
	ILSSplit         string  `yaml:"ils_split" json:"ils_split"`
	ChexmaskIDColumn string  `yaml:"chexmask_id_column" json:"chexmask_id_column"` // "" = first present of dicom_id, ImageID, image_id
	ChexmaskMinRCA   float64 `yaml:"chexmask_min_rca" json:"chexmask_min_rca"`

	SamplingOrder                      string `yaml:"sampling_order" json:"sampling_order"`
	MaxPositiveCandidates              int    `yaml:"max_positive_candidates" json:"max_positive_candidates"`
	MaxNegativeCandidates              int    `yaml:"max_negative_candidates" json:"max_negative_candidates"`
	ExcludePositiveImagesFromNegatives bool   `yaml:"exclude_positive_images_from_negatives" json:"exclude_positive_images_from_negatives"`

	LF int `yaml:"lf" json:"lf"`
	RF int `yaml:"rf" json:"rf"`
	RR int `yaml:"rr" json:"rr"`
	// NoDeformationRatio overrides rf/(rf+rr) per lesion.
	NoDeformationRatio map[string]float64 `yaml:"no_deformation_ratio" json:"no_deformation_ratio"`

	HeartLesions          []string `yaml:"heart_lesions" json:"heart_lesions"`
	DirectPhrasingLesions []string `yaml:"direct_phrasing_lesions" json:"direct_phrasing_lesions"`
	// LesionDefinitions add lesions to the built-in seven or redefine
	// them (docs/adding-a-lesion.md). Empty in the default configuration,
	// so it changes no default output.
	LesionDefinitions []benchmark.LesionDef `yaml:"lesion_definitions" json:"lesion_definitions,omitempty"`

	// lesions is the resolved lesion set (Validate).
	lesions *benchmark.LesionSet

	MinComponentPx int `yaml:"min_component_px" json:"min_component_px"`
	CleanupRadius  int `yaml:"cleanup_radius" json:"cleanup_radius"`
	LungTouchPx    int `yaml:"lung_touch_px" json:"lung_touch_px"`

	LungOverlapMin   float64 `yaml:"lung_overlap_min" json:"lung_overlap_min"`
	RegionOverlapMin float64 `yaml:"region_overlap_min" json:"region_overlap_min"`

	ForceContractionRegionRatio float64 `yaml:"force_contraction_region_ratio" json:"force_contraction_region_ratio"`
	ForceContractionLungRatio   float64 `yaml:"force_contraction_lung_ratio" json:"force_contraction_lung_ratio"`
	ForceExpansionRegionRatio   float64 `yaml:"force_expansion_region_ratio" json:"force_expansion_region_ratio"`

	DepthLung              int `yaml:"depth_lung" json:"depth_lung"`
	DepthHeart             int `yaml:"depth_heart" json:"depth_heart"`
	HeartZonesMax          int `yaml:"heart_zones_max" json:"heart_zones_max"`
	SequentialAnatomiesMax int `yaml:"sequential_anatomies_max" json:"sequential_anatomies_max"`

	RingIterationsExpansion   int `yaml:"ring_iterations_expansion" json:"ring_iterations_expansion"`
	RingIterationsContraction int `yaml:"ring_iterations_contraction" json:"ring_iterations_contraction"`

	PointWidths           []int `yaml:"point_widths" json:"point_widths"`
	FakePointWidths       []int `yaml:"fake_point_widths" json:"fake_point_widths"`
	PointSpacingPx        int   `yaml:"point_spacing_px" json:"point_spacing_px"`
	PointSeparationPx     int   `yaml:"point_separation_px" json:"point_separation_px"`
	FakePointSeparationPx int   `yaml:"fake_point_separation_px" json:"fake_point_separation_px"`

	AnatomyTries      int `yaml:"anatomy_tries" json:"anatomy_tries"`
	CatalogueAttempts int `yaml:"catalogue_attempts" json:"catalogue_attempts"`
	SequentialRetries int `yaml:"sequential_retries" json:"sequential_retries"`

	GeoSigma              float64 `yaml:"geo_sigma" json:"geo_sigma"`
	GeoAlpha              float64 `yaml:"geo_alpha" json:"geo_alpha"`
	GeoGradientPercentile float64 `yaml:"geo_gradient_percentile" json:"geo_gradient_percentile"`
	GeoRadiusFactor       float64 `yaml:"geo_radius_factor" json:"geo_radius_factor"`
	GeoWindow             int     `yaml:"geo_window" json:"geo_window"`

	OrganicMargin    float64    `yaml:"organic_margin" json:"organic_margin"`
	OrganicAxisRange [2]float64 `yaml:"organic_axis_range" json:"organic_axis_range"`
	OrganicCells     []int      `yaml:"organic_cells" json:"organic_cells"`
	OrganicWeights   []float64  `yaml:"organic_weights" json:"organic_weights"`

	DeformSmoothRadius int `yaml:"deform_smooth_radius" json:"deform_smooth_radius"`
	DeformMinPiecePx   int `yaml:"deform_min_piece_px" json:"deform_min_piece_px"`

	MinChangePx           int     `yaml:"min_change_px" json:"min_change_px"`
	MinChangeFrac         float64 `yaml:"min_change_frac" json:"min_change_frac"`
	MaxIoU                float64 `yaml:"max_iou" json:"max_iou"`
	RequireCenterInChange bool    `yaml:"require_center_in_change" json:"require_center_in_change"`
	MinMarkerSeparation   int     `yaml:"min_marker_separation" json:"min_marker_separation"`

	FakeMasksPerCall     int `yaml:"fake_masks_per_call" json:"fake_masks_per_call"`
	FakeMaskFailures     int `yaml:"fake_mask_failures" json:"fake_mask_failures"`
	FakeDepthEscalations int `yaml:"fake_depth_escalations" json:"fake_depth_escalations"`

	FakePointsWanted   int `yaml:"fake_points_wanted" json:"fake_points_wanted"`
	FakePointsPerDraw  int `yaml:"fake_points_per_draw" json:"fake_points_per_draw"`
	FakePointSpacingPx int `yaml:"fake_point_spacing_px" json:"fake_point_spacing_px"`
	FakeFallbackMaxPx  int `yaml:"fake_fallback_max_px" json:"fake_fallback_max_px"`

	MaxPoints        int `yaml:"max_points" json:"max_points"`
	QAPointSpacingPx int `yaml:"qa_point_spacing_px" json:"qa_point_spacing_px"`

	RevisionDistractors        int  `yaml:"revision_distractors" json:"revision_distractors"`
	RequireFourRevisionOptions bool `yaml:"require_four_revision_options" json:"require_four_revision_options"`
	RevisionGroupCap           int  `yaml:"revision_group_cap" json:"revision_group_cap"`

	DefaultMorphSize       int `yaml:"default_morph_size" json:"default_morph_size"`
	DefaultMorphIterations int `yaml:"default_morph_iterations" json:"default_morph_iterations"`

	// BundlePNGCompression is how the bundle's PNGs are compressed: ""
	// (or "default": the images by chexpercept's own writer, package
	// pngenc, about a quarter of image/png's CPU time for files about 7 %
	// larger; masks at image/png's default level), StandardPNG (every PNG
	// at image/png's default level: the bytes of builds before pngenc)
	// or FastPNG (every PNG by pngenc at its fastest). The pixels are
	// the same. Empty in the default configuration, so the case
	// fingerprints of default builds are unchanged.
	BundlePNGCompression string `yaml:"bundle_png_compression" json:"bundle_png_compression,omitempty"`
}

// Default returns the configuration with every default of build.md §2.5.
func Default() Config {
	return Config{
		Seed:                        0,
		Workers:                     runtime.NumCPU(),
		Lesions:                     benchmark.DefaultLesions().Names(),
		MimicLayout:                 "jpg_tree",
		ILSSplit:                    "train",
		SamplingOrder:               "shuffle",
		MaxPositiveCandidates:       3000,
		MaxNegativeCandidates:       100,
		LF:                          100,
		RF:                          100,
		RR:                          100,
		NoDeformationRatio:          map[string]float64{},
		HeartLesions:                benchmark.DefaultLesions().HeartNames(),
		DirectPhrasingLesions:       directPhrasing(benchmark.DefaultLesions()),
		MinComponentPx:              1000,
		CleanupRadius:               5,
		LungTouchPx:                 2,
		LungOverlapMin:              0.01,
		RegionOverlapMin:            0.2,
		ForceContractionRegionRatio: 0.75,
		ForceContractionLungRatio:   0.7,
		ForceExpansionRegionRatio:   0.5,
		DepthLung:                   2,
		DepthHeart:                  1,
		HeartZonesMax:               3,
		SequentialAnatomiesMax:      3,
		RingIterationsExpansion:     2,
		RingIterationsContraction:   1,
		PointWidths:                 []int{2, 3, 4},
		FakePointWidths:             []int{3, 4, 5},
		PointSpacingPx:              30,
		PointSeparationPx:           50,
		FakePointSeparationPx:       100,
		AnatomyTries:                3,
		CatalogueAttempts:           10,
		SequentialRetries:           10,
		GeoSigma:                    2.0,
		GeoAlpha:                    4,
		GeoGradientPercentile:       0.99,
		GeoRadiusFactor:             1.25,
		GeoWindow:                   256,
		OrganicMargin:               16,
		OrganicAxisRange:            [2]float64{0.5, 1.5},
		OrganicCells:                []int{32, 16, 8},
		OrganicWeights:              []float64{1, 0.5, 0.25},
		DeformSmoothRadius:          3,
		DeformMinPiecePx:            1000,
		MinChangePx:                 1500,
		MinChangeFrac:               0.03,
		MaxIoU:                      0.97,
		RequireCenterInChange:       true,
		MinMarkerSeparation:         30,
		FakeMasksPerCall:            4,
		FakeMaskFailures:            10,
		FakeDepthEscalations:        3,
		FakePointsWanted:            2,
		FakePointsPerDraw:           5,
		FakePointSpacingPx:          100,
		FakeFallbackMaxPx:           300,
		MaxPoints:                   8,
		QAPointSpacingPx:            100,
		RevisionDistractors:         3,
		RequireFourRevisionOptions:  true,
		RevisionGroupCap:            10000,
		DefaultMorphSize:            5,
		DefaultMorphIterations:      3,
	}
}

// directPhrasing lists the lesions of set with the direct detection
// wording, in the order the configuration has always written them.
func directPhrasing(set *benchmark.LesionSet) []string {
	var out []string
	for _, d := range set.Defs() {
		if d.Detection == benchmark.DirectWording {
			out = append(out, d.Name)
		}
	}
	slices.Reverse(out)
	return out
}

// maxConfigBytes bounds a configuration file (a few kilobytes).
const maxConfigBytes = yamlerr.MaxFileBytes

// Load reads a YAML configuration file over the defaults. Unknown keys and
// wrongly typed values are errors naming the file and the key.
func Load(path string) (Config, error) {
	cfg := Default()
	data, err := safefile.ReadFile(path, maxConfigBytes, safefile.Follow)
	if err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	if err := yamlerr.Decode(data, &cfg, true); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, cfg.Validate()
		}
		return cfg, fmt.Errorf("config %s: %v", path, err)
	}
	if len(cfg.LesionDefinitions) > 0 && !topLevelKey(data, "lesions") {
		// A file that defines lesions builds all of them unless it
		// says which.
		if set, err := benchmark.WithDefaults(cfg.LesionDefinitions); err == nil {
			cfg.Lesions = set.Names()
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// topLevelKey reports whether the YAML document data has key at its top
// level.
func topLevelKey(data []byte, key string) bool {
	var m map[string]any
	if yamlerr.Decode(data, &m, false) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

// Validate checks values that YAML typing cannot, and resolves the lesion
// set.
func (c *Config) Validate() error {
	set, err := c.resolveLesions()
	if err != nil {
		return err
	}
	c.lesions = set
	if len(c.LesionDefinitions) > 0 {
		// The recorded configuration says what the definitions decided.
		c.HeartLesions = set.HeartNames()
		c.DirectPhrasingLesions = nil
		for _, d := range set.Defs() {
			if d.Detection == benchmark.DirectWording {
				c.DirectPhrasingLesions = append(c.DirectPhrasingLesions, d.Name)
			}
		}
	}
	seen := make(map[string]bool, len(c.Lesions))
	for _, l := range c.Lesions {
		if !set.Has(l) {
			return fmt.Errorf("lesions: %q is not a defined lesion (%s)", textsafe.OneLine(l), set.Describe())
		}
		if seen[l] {
			return fmt.Errorf("lesions: %q is listed twice", textsafe.OneLine(l))
		}
		seen[l] = true
	}
	for l, r := range c.NoDeformationRatio {
		if !set.Has(l) {
			return fmt.Errorf("no_deformation_ratio: %q is not a defined lesion (%s)", textsafe.OneLine(l), set.Describe())
		}
		if r < 0 || r > 1 {
			return fmt.Errorf("no_deformation_ratio.%s: %v is outside [0, 1]", l, r)
		}
	}
	switch c.BundlePNGCompression {
	case "", StandardPNG, FastPNG:
	case "default":
		c.BundlePNGCompression = ""
	default:
		return fmt.Errorf("bundle_png_compression: %q is not default, standard or fast", textsafe.OneLine(c.BundlePNGCompression))
	}
	switch c.MimicLayout {
	case "jpg_tree", "flat_png":
	default:
		return fmt.Errorf("mimic_layout: %q is not jpg_tree or flat_png", c.MimicLayout)
	}
	switch c.SamplingOrder {
	case "shuffle", "file_order":
	default:
		return fmt.Errorf("sampling_order: %q is not shuffle or file_order", c.SamplingOrder)
	}
	if c.LF < 0 || c.RF < 0 || c.RR < 0 {
		return fmt.Errorf("lf, rf, rr must not be negative")
	}
	if len(c.PointWidths) == 0 || len(c.FakePointWidths) == 0 {
		return fmt.Errorf("point_widths and fake_point_widths must not be empty")
	}
	if len(c.OrganicCells) != len(c.OrganicWeights) {
		return fmt.Errorf("organic_cells and organic_weights must have the same length")
	}
	for _, w := range append(append([]int(nil), c.PointWidths...), c.FakePointWidths...) {
		if w < 1 {
			return fmt.Errorf("point_widths/fake_point_widths: width %d must be ≥ 1", w)
		}
	}
	for _, k := range []struct {
		key string
		v   int
		min int
	}{
		{"heart_zones_max", c.HeartZonesMax, 1}, {"sequential_anatomies_max", c.SequentialAnatomiesMax, 1},
		{"depth_lung", c.DepthLung, 1}, {"depth_heart", c.DepthHeart, 1},
		{"anatomy_tries", c.AnatomyTries, 1}, {"catalogue_attempts", c.CatalogueAttempts, 1},
		{"sequential_retries", c.SequentialRetries, 1},
		{"ring_iterations_expansion", c.RingIterationsExpansion, 0}, {"ring_iterations_contraction", c.RingIterationsContraction, 0},
		{"geo_window", c.GeoWindow, 0}, {"deform_smooth_radius", c.DeformSmoothRadius, 0},
		{"cleanup_radius", c.CleanupRadius, 0}, {"lung_touch_px", c.LungTouchPx, 0},
		{"point_spacing_px", c.PointSpacingPx, 0}, {"fake_point_spacing_px", c.FakePointSpacingPx, 0},
		{"min_component_px", c.MinComponentPx, 0}, {"max_points", c.MaxPoints, 1},
		{"default_morph_size", c.DefaultMorphSize, 1}, {"default_morph_iterations", c.DefaultMorphIterations, 0},
	} {
		if k.v < k.min {
			return fmt.Errorf("%s: %d must be ≥ %d", k.key, k.v, k.min)
		}
	}
	for _, z := range c.OrganicCells {
		if z < 1 {
			return fmt.Errorf("organic_cells: cell size %d must be ≥ 1", z)
		}
	}
	if err := c.checkFinite(); err != nil {
		return err
	}
	if a := c.OrganicAxisRange; !(a[0] > 0 && a[0] <= a[1]) {
		return fmt.Errorf("organic_axis_range: %v must satisfy 0 < low ≤ high", a)
	}
	if !(c.GeoSigma >= 0) || !(c.GeoAlpha >= 0) {
		return fmt.Errorf("geo_sigma and geo_alpha must be ≥ 0")
	}
	if !(c.GeoGradientPercentile > 0 && c.GeoGradientPercentile <= 1) {
		return fmt.Errorf("geo_gradient_percentile: %v must be in (0, 1]", c.GeoGradientPercentile)
	}
	return nil
}

// checkFinite rejects NaN and the infinities (YAML's .nan, .inf): the
// resolved configuration is written as JSON, which has no such numbers.
func (c *Config) checkFinite() error {
	keys := []struct {
		key string
		v   []float64
	}{
		{"chexmask_min_rca", []float64{c.ChexmaskMinRCA}}, {"lung_overlap_min", []float64{c.LungOverlapMin}},
		{"region_overlap_min", []float64{c.RegionOverlapMin}},
		{"force_contraction_region_ratio", []float64{c.ForceContractionRegionRatio}},
		{"force_contraction_lung_ratio", []float64{c.ForceContractionLungRatio}},
		{"force_expansion_region_ratio", []float64{c.ForceExpansionRegionRatio}},
		{"geo_sigma", []float64{c.GeoSigma}}, {"geo_alpha", []float64{c.GeoAlpha}},
		{"geo_gradient_percentile", []float64{c.GeoGradientPercentile}}, {"geo_radius_factor", []float64{c.GeoRadiusFactor}},
		{"organic_margin", []float64{c.OrganicMargin}}, {"organic_axis_range", c.OrganicAxisRange[:]},
		{"organic_weights", c.OrganicWeights}, {"min_change_frac", []float64{c.MinChangeFrac}}, {"max_iou", []float64{c.MaxIoU}},
	}
	for _, l := range slices.Sorted(maps.Keys(c.NoDeformationRatio)) {
		keys = append(keys, struct {
			key string
			v   []float64
		}{"no_deformation_ratio." + l, []float64{c.NoDeformationRatio[l]}})
	}
	for _, k := range keys {
		for _, v := range k.v {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s: %v is not a finite number", k.key, v)
			}
		}
	}
	return nil
}

// RFRatio is the revision-free share for a lesion (build.md §3).
func (c *Config) RFRatio(lesion string) float64 {
	if r, ok := c.NoDeformationRatio[lesion]; ok {
		return r
	}
	if c.RF+c.RR == 0 {
		return 0
	}
	return float64(c.RF) / float64(c.RF+c.RR)
}

// IsHeartLesion reports whether lesion is heart-type (no lung regions, no
// attribute stage).
func (c *Config) IsHeartLesion(lesion string) bool { return c.LesionSet().IsHeart(lesion) }

// LesionSet is the resolved lesion set: the built-in seven with
// lesion_definitions applied (and, without definitions, the older keys
// heart_lesions and direct_phrasing_lesions).
func (c *Config) LesionSet() *benchmark.LesionSet {
	if c.lesions != nil {
		return c.lesions
	}
	set, err := c.resolveLesions()
	if err != nil {
		// Validate reports the error; a configuration that was never
		// validated falls back to the built-in set.
		return benchmark.DefaultLesions()
	}
	return set
}

// resolveLesions builds the lesion set. With lesion_definitions, the
// definitions decide each lesion's kind and wording, and heart_lesions
// and direct_phrasing_lesions must be left at their defaults or agree.
// Without, those two keys adjust the built-in definitions as they always
// did.
func (c *Config) resolveLesions() (*benchmark.LesionSet, error) {
	defaults := Default()
	if len(c.LesionDefinitions) == 0 {
		defs := benchmark.DefaultLesionDefs()
		for i := range defs {
			heart := slices.Contains(c.HeartLesions, defs[i].Name)
			defs[i].Kind, defs[i].HeartNote = benchmark.LungKind, !heart
			if heart {
				defs[i].Kind = benchmark.HeartKind
			}
			defs[i].Detection = benchmark.SuggestiveWording
			if slices.Contains(c.DirectPhrasingLesions, defs[i].Name) {
				defs[i].Detection = benchmark.DirectWording
			}
		}
		set, err := benchmark.NewLesionSet(defs)
		if err != nil {
			return nil, fmt.Errorf("lesions: %w", err)
		}
		for _, k := range []struct {
			key   string
			names []string
		}{{"heart_lesions", c.HeartLesions}, {"direct_phrasing_lesions", c.DirectPhrasingLesions}} {
			for _, l := range k.names {
				if !set.Has(l) {
					return nil, fmt.Errorf("%s: %q is not a defined lesion (%s)", k.key, textsafe.OneLine(l), set.Describe())
				}
			}
		}
		return set, nil
	}
	set, err := benchmark.WithDefaults(c.LesionDefinitions)
	if err != nil {
		return nil, fmt.Errorf("lesion_definitions: %w", err)
	}
	// The build writes the set as the benchmark's lesions.json: refuse
	// now what validate and eval would refuse to read.
	if _, err := benchmark.MarshalLesions(set); err != nil {
		return nil, fmt.Errorf("lesion_definitions: %w", err)
	}
	var direct []string
	for _, d := range set.Defs() {
		if d.Detection == benchmark.DirectWording {
			direct = append(direct, d.Name)
		}
	}
	for _, k := range []struct {
		key          string
		given, def   []string
		fromDefs     []string
		explainField string
	}{
		{"heart_lesions", c.HeartLesions, defaults.HeartLesions, set.HeartNames(), "kind"},
		{"direct_phrasing_lesions", c.DirectPhrasingLesions, defaults.DirectPhrasingLesions, direct, "detection"},
	} {
		if !slices.Equal(k.given, k.def) && !slices.Equal(slices.Sorted(slices.Values(k.given)), slices.Sorted(slices.Values(k.fromDefs))) {
			return nil, fmt.Errorf("%s: disagrees with lesion_definitions; set each lesion's %s there instead", k.key, k.explainField)
		}
	}
	return set, nil
}

// Values of bundle_png_compression besides the default.
const (
	// StandardPNG: every PNG at image/png's default level.
	StandardPNG = "standard"
	// FastPNG: every PNG by package pngenc at its fastest
	// (klauspost/compress's fastest deflate).
	FastPNG = "fast"
)

// NonFingerprintKeys are the keys that only decide which cases are sampled
// or how the build runs; every other key enters the case fingerprint.
var NonFingerprintKeys = map[string]bool{
	"workers": true, "lesions": true, "mimic_layout": true, "ils_split": true,
	"sampling_order": true, "max_positive_candidates": true, "max_negative_candidates": true,
	"exclude_positive_images_from_negatives": true, "lf": true, "rf": true, "rr": true,
	"no_deformation_ratio": true,
}
