// Package review is the expert review of candidate cases (spec build.md
// §4): the review database and its web app, review packs and sheets, their
// import and export, and item-health re-review rounds. What a decision is
// and how decisions resolve is package reviewlog's, which the builder
// reads without this package.
package review
