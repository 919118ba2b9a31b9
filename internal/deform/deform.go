// Package deform is the deformation engine of the builder (build.md §8): it
// corrupts a positive case's optimal lesion mask in controlled, attributable
// ways and produces the distractor masks the revision questions need.
//
// The model, in the order the case RNG is consumed (§13):
//
//   - Catalogue pass (§8.6). Per component, anatomies (lung regions, or zones
//     for heart-type lesions) are selected with an operation (§8.2), and a
//     cluster of boundary points is placed on the component's dilated
//     (expansion) or eroded (contraction) contour inside each anatomy (§8.3).
//     One deformation with all clusters must validate (§8.5); the kept
//     attempt is suboptimal_component_<i> and its anatomies form the
//     catalogue the sequential pass draws from.
//   - Sequential pass (§8.7). A few catalogue anatomies are selected; each is
//     applied as one step to the previous state of its component, so every
//     step is exactly attributable to one anatomy and one operation. After
//     each valid step two calls of §8.8 place fake points and fake masks
//     (wrong edits elsewhere). A retry ends with the marker-separation check
//     and the caller's finalize hook (§9.4, §9.5).
//
// The deformation operator (§8.4) replaces the reference's neural re-
// segmentation: each prompt point grows a geodesic ball over an
// intensity-aware cost field until it reaches the mask, with an organic,
// randomly shaped margin; expansion balls are added, contraction balls
// removed, then the result is smoothed.
//
// Everything is a pure function of the inputs, the configuration and the RNG
// state; all randomness comes from the case RNG passed to Run. Rings are
// cached per case and morphology runs on bounding-box crops, so a full case
// costs well under a second of CPU.
package deform

import (
	"image"
	"strings"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
)

// Op is a deformation operation.
type Op int

const (
	Expansion Op = iota
	Contraction
)

// String is the operation's name as written in outputs and mask names.
func (o Op) String() string {
	if o == Expansion {
		return "expansion"
	}
	return "contraction"
}

// Opposite is the revision of a corruption with operation o.
func (o Op) Opposite() Op { return 1 - o }

// ReasonDeformationFailed is the §14 reason of a case whose catalogue or
// sequential pass is exhausted.
const ReasonDeformationFailed = "deformation_failed"

// AnatomyPoints is one anatomy's cluster of prompt points (§8.3).
type AnatomyPoints struct {
	Name   string
	Op     Op
	Points []mask.Point
	Widths []int  // anatomy_depth_width_levels, one per depth
	Side   string // "left", "right" or "" (from the name)
	Center mask.Point
}

// CatalogueEntry is the kept catalogue attempt of one component (§8.6).
type CatalogueEntry struct {
	Component int
	// Anatomies that got points: expansion first, then contraction, each in
	// selection order.
	Anatomies  []AnatomyPoints
	Mask       mask.Mask // suboptimal_component_<i>
	RetryCount int       // 0-based index of the valid attempt
	Left       bool
	Right      bool
	// LesionOverlap is the component's lesion_overlap (zones, then lung
	// regions with has_overlap), recorded for the JSON of §11.
	LesionOverlap []Overlap
	// Log is this component's CatalogueLog (every attempt, for inspect).
	Log any
}

// Fake is one fake mask of a step ("<step>_fake_<op>_<k>").
type Fake struct {
	Name string
	Op   Op
	Mask mask.Mask
}

// Step is one valid sequential corruption step (§8.7).
type Step struct {
	Component int
	Op        Op
	Index     int    // exp_idx / cont_idx (1-based)
	Name      string // "suboptimal_component_<i>_exp<n>" / "..._cont<n>"
	Anatomy   string
	Points    []mask.Point
	Center    mask.Point
	Mask      mask.Mask
	// Fakes are the first call's fake masks, then the second call's.
	Fakes                 []Fake
	FakePointsExpansion   []mask.Point // from the call whose ring lies outside the step mask
	FakePointsContraction []mask.Point // from the inside ring
	Before, After         string       // revision_flow
}

// ComponentSteps are one component's steps in a sequential retry.
type ComponentSteps struct {
	Component     int
	Expansion     []Step
	Contraction   []Step
	NoExpansion   bool // <sid>_no_expansion was saved
	NoContraction bool // <sid>_no_contraction was saved
	Undeformed    bool // no targets at all: a no_deformation entry
}

// Attempt is one complete sequential retry.
type Attempt struct {
	Components []ComponentSteps
	// Masks holds every named mask of the attempt: optimal_component_<i>,
	// <sid>_no_expansion / _no_contraction, step masks and fake masks.
	Masks map[string]mask.Mask
	// Names lists the keys of Masks in creation order (for deterministic
	// iteration by callers).
	Names []string
}

func (a *Attempt) put(name string, m mask.Mask) {
	if _, ok := a.Masks[name]; !ok {
		a.Names = append(a.Names, name)
	}
	a.Masks[name] = m
}

// Steps returns all steps of the attempt: per component in id order, its
// expansion steps then its contraction steps.
func (a *Attempt) Steps() []*Step {
	var out []*Step
	for ci := range a.Components {
		c := &a.Components[ci]
		for i := range c.Expansion {
			out = append(out, &c.Expansion[i])
		}
		for i := range c.Contraction {
			out = append(out, &c.Contraction[i])
		}
	}
	return out
}

// Result is the outcome of Run for a case that succeeded.
type Result struct {
	Catalogue []CatalogueEntry
	// Possible is possible_deformation_anatomy: per component in id order,
	// its expansion then contraction anatomy names (duplicates kept).
	Possible []string
	Final    *Attempt
	Log      *Log
}

// Overlap is one lesion_overlap entry of a component (§7).
type Overlap struct {
	Name  string
	Key   string // "zones" | "lung_regions"
	Ratio float64
}

// Geometry is the per-case geometry the engine works on; Input (built from
// the anatomy package's types) converts to it. It is exported so that tests
// and tools can drive the engine from synthetic masks.
type Geometry struct {
	Gray       *image.Gray
	Components []mask.Mask // optimal_component_<i>
	// LungRight, LungLeft are the lesion-augmented lungs (§5 step 5).
	LungRight, LungLeft mask.Mask
	// Regions maps every zone and lung-region name to its mask.
	Regions map[string]mask.Mask
	// Overlaps[i] describes component i.
	Overlaps  []ComponentOverlap
	HeartType bool
}

// ComponentOverlap is the part of a component's §7 record the engine reads.
type ComponentOverlap struct {
	LesionOverlap         []Overlap // zones then lung regions with has_overlap
	LeftRatio, RightRatio float64   // ratio against the augmented lungs
}

// sideOf is the side of an anatomy name: "right" if it contains "right",
// else "left" if it contains "left", else "".
func sideOf(name string) string {
	switch {
	case strings.Contains(name, "right"):
		return "right"
	case strings.Contains(name, "left"):
		return "left"
	}
	return ""
}

// engine holds the per-case state of one Run.
type engine struct {
	cfg       buildcfg.Config
	g         *Geometry
	w, h      int
	lungUnion mask.Mask
	regionR   mask.Mask // Rf of §8.8: lung union, or the whole image (heart-type)
	cost      []float64
	rings     *ringCache
	e32       mask.SE
	smooth    mask.SE
	log       *Log
	empty     mask.Mask
	search    *bucketSearch // nil when some cost is below 1

	// Reusable buffers of the geodesic balls.
	popBuf         []popped
	noiseBuf       []float64
	addBuf, remBuf []int32
}
