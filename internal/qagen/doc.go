// Package qagen turns a case's sequential deformation attempt and its
// attribute answers into a benchmark record (spec build.md §9, §10 wording,
// §11 images).
//
// The model: every corruption step of the attempt is undone by the
// opposite operation, so each step's centre is a ground-truth point of the
// expansion or contraction question (NewPointPool, §9.4), and the
// un-corrupted masks form the true option of the revision-result question,
// whose distractors are other per-component choices of step masks, fake
// masks and default tokens (RevisionOptions, §9.5). Both run inside the
// sequential retry and draw from the case RNG in that order;
// RevisionOptions can fail the retry with insufficient_revision_options.
// AssembleRecord then words everything with the embedded templates.yaml
// (our own text, versioned by TemplatesVersion) and RenderRecordImages draws
// the record's images with package render.
package qagen
