package report

// The image controls' outputs: ext_image_control.csv, the report's
// section "Does the model use the image?" (report.md and index.html),
// and, in the findings, how much of each stage's accuracy lies above the
// no-image level. The numbers come from analysis.ImageControl.

import (
	"fmt"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/results"
)

// ImageControlFile is the CSV of the image controls. It is always
// written (header only without control runs), so that a report never
// leaves an earlier report's rows behind.
const ImageControlFile = "ext_image_control.csv"

// ImageControlHeader is ImageControlFile's header.
var ImageControlHeader = []string{"run", "control", "oracle_mode", "path", "stage", "n_records", "acc_image", "acc_control",
	"difference", "ci_low", "ci_high", "p_value", "surviving_share"}

func extImageControl(res *analysis.Result) []byte {
	var rows [][]string
	if ic := res.ImageControl; ic != nil {
		for _, r := range ic.Rows {
			row := []string{r.Run, string(r.Control), r.OracleMode, string(r.Path), itoa(int(r.Stage)), itoa(r.NRecords), NA, NA, NA, NA, NA, NA, NA}
			if r.Valid {
				row[6], row[7], row[8], row[9], row[10], row[11] = f6(r.AccImage), f6(r.AccControl), f6(r.Diff), f6(r.Lo), f6(r.Hi), f6(r.P)
			}
			if r.SurvivingValid {
				row[12] = f6(r.Surviving)
			}
			rows = append(rows, row)
		}
	}
	return results.CSV(ImageControlHeader, rows)
}

// imageDoc is the section "Does the model use the image?".
type imageDoc struct {
	Verdicts []string // one sentence per model run and control
	Notes    []string
	Tables   []*table
}

// ImageUseTitle is the section's heading.
const ImageUseTitle = "Does the model use the image?"

// buildImageDoc lays out the section; nil without a control run that
// pairs with a model's run.
func buildImageDoc(res *analysis.Result) *imageDoc {
	ic := res.ImageControl
	if ic == nil || len(ic.Uses) == 0 {
		return nil
	}
	d := &imageDoc{}
	for _, u := range ic.Uses {
		d.Verdicts = append(d.Verdicts, fmt.Sprintf("Oracle %s: %s.", u.OracleMode, u.Sentence()))
	}
	d.Notes = []string{
		"Each model run with a control run (eval --control) is compared with it on the same records: end-to-end accuracy per path and stage with the image and without it (text-only: every image removed, the texts unchanged; blank-radiograph: the masks, points and candidate contours drawn over a uniform grey instead of the radiograph), on the records ok in both runs for which the stage applies.",
		fmt.Sprintf("Difference = with − without, in points, with a paired bootstrap 95 %% interval over records (B = %d; Newcombe's interval when every replicate gives the same difference) and McNemar's exact p. A stage whose accuracy drops reliably without the image (interval above 0 and p ≤ %.2f) uses the image; any other is answered without using it: a text cue, a skewed answer set or a habit carries it. Surviving: the share of the right answers with the image that are also right without it.", res.Options.Bootstrap, analysis.DropAlpha),
		"Cost: one more run per model and control, as many calls as the model's run (the text-only control sends no image, so its calls are smaller).",
	}
	for i, u := range ic.Uses {
		t := &table{Title: fmt.Sprintf("Image control: %s with and without the image (%s control, oracle %s)", u.Run, u.Control, u.OracleMode),
			Header: []string{"Path", "Stage", "n", "With image (%)", "Without (%)", "Difference (points) [95% CI]", "McNemar p", "Surviving (%)", "Verdict"},
			ID:     fmt.Sprintf("image-%d", i+1)}
		for _, r := range ic.Rows {
			if r.ControlRun != u.ControlRun || r.OracleMode != u.OracleMode {
				continue
			}
			if !r.Valid {
				t.row(string(r.Path), itoa(int(r.Stage)), "0", NAText, NAText, NAText, NAText, NAText, NAText)
				continue
			}
			verdict := "no reliable drop"
			if r.Drops() {
				verdict = "drops: uses the image"
			}
			surv := NAText
			if r.SurvivingValid {
				surv = pct(r.Surviving)
			}
			t.row(string(r.Path), itoa(int(r.Stage)), itoa(r.NRecords), pct(r.AccImage), pct(r.AccControl),
				signedCI(true, r.Diff, r.Lo, r.Hi), fmt.Sprintf("%.3f", r.P), surv, verdict)
		}
		d.Tables = append(d.Tables, t)
	}
	return d
}

func (d *imageDoc) markdown(b *strings.Builder) {
	b.WriteString("\n## " + ImageUseTitle + "\n\n")
	for _, v := range d.Verdicts {
		b.WriteString("- " + v + "\n")
	}
	for _, n := range d.Notes {
		b.WriteString("\n" + n + "\n")
	}
	for _, t := range d.Tables {
		t.markdown(b)
	}
}

// aboveNoImage adds to the findings, per oracle mode, how much of each
// stage's end-to-end accuracy lies above the no-image level: with the
// image − without, per model run and control (one column each, so that a
// few controls fit a window), with its interval.
func (f *findingsDoc) aboveNoImage(res *analysis.Result, mode string) {
	ic := res.ImageControl
	if ic == nil {
		return
	}
	var uses []analysis.ImageUse
	hdr := []string{"Path, stage"}
	for _, u := range ic.Uses {
		if u.OracleMode == mode {
			uses = append(uses, u)
			hdr = append(hdr, u.Run+" ("+string(u.Control)+")")
		}
	}
	if len(uses) == 0 {
		return
	}
	t := f.newTable("Above the no-image level: end-to-end accuracy with the image − without it, in points [95% CI]; \"drop\" marks a reliable drop (oracle "+mode+")", hdr...)
	for _, c := range stageCells() {
		row := []string{c.label()}
		for _, u := range uses {
			cell := NAText
			for _, r := range ic.Rows {
				if r.ControlRun == u.ControlRun && r.OracleMode == mode && r.Path == c.path && r.Stage == c.k && r.Valid {
					cell = signedCI(true, r.Diff, r.Lo, r.Hi)
					if r.Drops() {
						cell += " drop"
					}
				}
			}
			row = append(row, cell)
		}
		t.row(row...)
	}
}
