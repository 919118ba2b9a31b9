package qagen

import (
	"fmt"
	"image"
	"path"
	"regexp"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/render"
)

// Image paths relative to chexpercept/<key_id>/ (format.md §1).
const (
	XrayPath        = "detection_qa/xray.png"
	EvalImagePath   = "contour_qa/" + ContourEvalPath
	RevisionDir     = "contour_qa/contour_revision_qa"
	PointsImagePath = RevisionDir + "/xray_with_mask_and_points.png"
)

var optionFileRE = regexp.MustCompile(`^option_[1-9][0-9]*_mask_(answer|fake)\.png$`)

// RecordTokens is the token resolver of a record's option images: masks
// are the attempt's named masks, default_keep the union of the record's
// revision_before_masks.
func RecordTokens(rec *benchmark.Record, masks map[string]mask.Mask, lungs render.Lungs, cfg buildcfg.Config) *render.Tokens {
	t := &render.Tokens{Masks: masks, Lungs: lungs, MorphSize: cfg.DefaultMorphSize, MorphIterations: cfg.DefaultMorphIterations}
	if rec != nil && rec.Contour != nil {
		t.Before = rec.Contour.RevisionBeforeMasks
	}
	return t
}

// RenderRecordImages renders every image of a record's folder (§11),
// keyed by the path relative to chexpercept/<key_id>/: the CXR for all
// records; the contour-eval overlay for RF (union of revision_after_masks)
// and RR (union of revision_before_masks); for RR also the points image
// (before-mask overlay plus the option discs) and one overlay per
// revision option. All images are opaque RGBA (written as 8-bit RGB).
func RenderRecordImages(gray *image.Gray, rec *benchmark.Record, masks map[string]mask.Mask, lungs render.Lungs, cfg buildcfg.Config) (map[string]*image.RGBA, error) {
	out := map[string]*image.RGBA{}
	err := EachRecordImage(gray, rec, masks, lungs, cfg, func(rel string, img *image.RGBA) error {
		out[rel] = render.CloneRGBA(img)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RecordImagePaths lists the image paths of a record (relative to
// chexpercept/<key_id>/) in the order EachRecordImage produces them.
func RecordImagePaths(rec *benchmark.Record) []string {
	out := []string{XrayPath}
	if rec == nil || rec.Contour == nil {
		return out
	}
	out = append(out, EvalImagePath)
	if rec.Contour.NoDeformation {
		return out
	}
	out = append(out, PointsImagePath)
	for _, o := range rec.Contour.RevisionResult.AnswerOptions {
		out = append(out, path.Join(RevisionDir, o.RelativePath))
	}
	return out
}

// EachRecordImage renders the images of RenderRecordImages one at a time,
// in RecordImagePaths order, into one reused buffer, and hands each to fn
// (typically a PNG encoder). img is only valid during the call. An error
// from fn stops the walk and is returned.
func EachRecordImage(gray *image.Gray, rec *benchmark.Record, masks map[string]mask.Mask, lungs render.Lungs, cfg buildcfg.Config, fn func(rel string, img *image.RGBA) error) error {
	if rec == nil {
		return errNoRecord
	}
	b := gray.Bounds()
	buf := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	render.Gray2RGBInto(buf, gray)
	if err := fn(XrayPath, buf); err != nil {
		return err
	}
	cq := rec.Contour
	if cq == nil {
		return nil
	}
	tok := RecordTokens(rec, masks, lungs, cfg)
	shown := cq.RevisionBeforeMasks
	if cq.NoDeformation {
		shown = cq.RevisionAfterMasks
	}
	m, err := tok.Union(shown)
	if err != nil {
		return fmt.Errorf("qagen: %s: contour-eval image: %w", rec.KeyID, err)
	}
	render.OverlayInto(buf, gray, m)
	if err := fn(EvalImagePath, buf); err != nil {
		return err
	}
	if cq.NoDeformation {
		return nil
	}
	// The points image is the same before-mask overlay plus the discs.
	if err := render.DrawPoints(buf, cq.Expansion.AnswerOptions); err != nil {
		return fmt.Errorf("qagen: %s: points image: %w", rec.KeyID, err)
	}
	if err := fn(PointsImagePath, buf); err != nil {
		return err
	}
	var um mask.Mask
	for k, o := range cq.RevisionResult.AnswerOptions {
		if !optionFileRE.MatchString(o.RelativePath) {
			return fmt.Errorf("qagen: %s: revision option %d has path %q, not option_<k>_mask_{answer,fake}.png", rec.KeyID, k+1, o.RelativePath)
		}
		um, err = tok.UnionInto(um, o.Masks)
		if err != nil {
			return fmt.Errorf("qagen: %s: revision option %d: %w", rec.KeyID, k+1, err)
		}
		render.OverlayInto(buf, gray, um)
		if err := fn(path.Join(RevisionDir, o.RelativePath), buf); err != nil {
			return err
		}
	}
	return nil
}

// InspectImages renders the inspect view's points.png (the points image
// with each disc labelled "<k> <colour> <kind>") and revision_options.png
// (the option images side by side, captioned with type and masks) of an
// RR or RF record (§12). pool supplies the kinds of the point options.
func InspectImages(gray *image.Gray, rec *benchmark.Record, pool *PointPool, masks map[string]mask.Mask, lungs render.Lungs, cfg buildcfg.Config) (points, options *image.RGBA, err error) {
	if rec == nil || rec.Contour == nil {
		return nil, nil, fmt.Errorf("qagen: inspect images need a positive record")
	}
	cq := rec.Contour
	tok := RecordTokens(rec, masks, lungs, cfg)
	m, err := tok.Union(cq.RevisionBeforeMasks)
	if err != nil {
		return nil, nil, fmt.Errorf("qagen: %s: points image: %w", rec.KeyID, err)
	}
	labels := make([]string, len(cq.Expansion.AnswerOptions))
	for k, o := range cq.Expansion.AnswerOptions {
		kind := ""
		if pool != nil && k < len(pool.Kinds) {
			kind = " " + pool.Kinds[k]
		}
		labels[k] = fmt.Sprintf("%d %s%s", k+1, o.Color, kind)
	}
	points, err = render.LabelledPoints(render.Overlay(gray, m), cq.Expansion.AnswerOptions, labels)
	if err != nil {
		return nil, nil, fmt.Errorf("qagen: %s: %w", rec.KeyID, err)
	}
	var imgs []*image.RGBA
	var caps [][]string
	for k, o := range cq.RevisionResult.AnswerOptions {
		u, err := tok.Union(o.Masks)
		if err != nil {
			return nil, nil, fmt.Errorf("qagen: %s: revision option %d: %w", rec.KeyID, k+1, err)
		}
		imgs = append(imgs, render.Overlay(gray, u))
		caps = append(caps, append([]string{fmt.Sprintf("%s: %s", benchmark.Ordinal(k+1), o.Type)}, o.Masks...))
	}
	return points, render.OptionSheet(imgs, caps), nil
}
