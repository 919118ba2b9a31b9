package review

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/pycsv"
	"github.com/chexpercept/chexpercept/internal/reviewlog"

	"github.com/chexpercept/chexpercept/internal/atomicfile"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// Sheet headers (§4 review packs and reference sheet layouts).
var (
	ReviewSheetHeader   = []string{"key_id", "lesion", "label", "image_sha256", "mask_sha256", "location_hints", "report_excerpt", "decision"}
	PositiveSheetHeader = []string{"key_id", "dicom_id", "target", "pair_id", "mapped_location", "segmentation_source", "plot_path", "optimal?"}
	NegativeSheetHeader = []string{"lesion", "key_id", "dicom_id", "optimal?"}
)

// csvRows writes rows with the reference's CSV conventions (pycsv).
func csvRows(rows [][]string) []byte { return pycsv.Rows(rows...) }

// MappedLocation joins location hints as the reference does: "heart" for
// heart-type lesions; none → "right lung and left lung"; one → itself; two
// → "A and B"; three or more → "A, B, and C". Hints are de-duplicated in
// order first.
func MappedLocation(hints []string, heart bool) string {
	if heart {
		return "heart"
	}
	var u []string
	seen := map[string]bool{}
	for _, h := range hints {
		if !seen[h] {
			seen[h] = true
			u = append(u, h)
		}
	}
	switch len(u) {
	case 0:
		return "right lung and left lung"
	case 1:
		return u[0]
	case 2:
		return u[0] + " and " + u[1]
	}
	return strings.Join(u[:len(u)-1], ", ") + ", and " + u[len(u)-1]
}

// SheetsMarker marks a directory ExportCSV wrote, so that a later export
// may write into it again.
const SheetsMarker = ".chexpercept-review-sheets"

// ExportCSV writes the reference sheet layouts of the database's cases:
// dir/positive.csv and dir/negative.csv, `optimal?` = 1 for accepted cases
// (resolved decision accept) and empty otherwise, plot_path empty.
func (s *Store) ExportCSV(ctx context.Context, j *job.Job, dir string) error {
	st, err := s.Snapshot(ctx)
	if err != nil {
		return err
	}
	cfg := buildcfg.Default()
	pos := [][]string{PositiveSheetHeader}
	neg := [][]string{NegativeSheetHeader}
	for _, cs := range st {
		c := cs.Case
		opt := ""
		if ln := cs.Resolved(); ln != nil && ln.Decision == reviewlog.DecisionAccept {
			opt = "1"
		}
		dicom := ""
		if c.ImageID != nil {
			dicom = *c.ImageID
		}
		if c.Positive() {
			pos = append(pos, []string{c.KeyID, dicom, c.Lesion, c.CaseID,
				MappedLocation(c.LocationHints, cfg.IsHeartLesion(c.Lesion)), c.SourceType, "", opt})
		} else {
			neg = append(neg, []string{c.Lesion, c.KeyID, dicom, opt})
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export %s: %w", dir, safefile.Reason(err))
	}
	if err := outdir.WriteMarker(filepath.Join(dir, SheetsMarker), []byte("written by chexpercept review export --csv\n")); err != nil {
		return err
	}
	// An export killed while a sheet was renamed into place left its
	// temporary file: it is this command's own.
	if err := outdir.RemoveStale(dir, func(rel string) bool { return rel == "positive.csv" || rel == "negative.csv" }, SheetsMarker); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(j, filepath.Join(dir, "positive.csv"), csvRows(pos)); err != nil {
		return err
	}
	return atomicfile.WriteFile(j, filepath.Join(dir, "negative.csv"), csvRows(neg))
}

// ExportJSONL writes the resolved lines to path (atomically; j tracks
// the temporary file).
func (s *Store) ExportJSONL(ctx context.Context, j *job.Job, path string) (int, error) {
	lines, err := s.ResolvedLines(ctx)
	if err != nil {
		return 0, err
	}
	return len(lines), atomicfile.WriteFile(j, path, MarshalLines(lines))
}
