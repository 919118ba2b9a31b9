package report

import (
	"fmt"
	"strings"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/results"
)

// Provenance in every output a person reads: a benchmark built from
// phantoms or without review, and runs answered by chexpercept's own
// stand-in server, are said to be what they are before any number.

// banners are the report's opening warnings (none for a reviewed
// benchmark of real cases and real model runs).
func banners(res *analysis.Result) []string {
	var out []string
	b := res.Set.Build
	var what []string
	if b.Phantom {
		what = append(what, "built from synthetic phantom radiographs, not patient images")
	}
	if b.Unreviewed() {
		what = append(what, "never reviewed by a radiologist (every case accepted: review_mode accept_all)")
	}
	if len(what) > 0 {
		out = append(out, "Synthetic / unreviewed benchmark: "+strings.Join(what, "; ")+
			" (from the benchmark's build_info.json). These numbers test the tooling; they are not a study.")
	}
	var rehearsals []string
	seen := map[string]bool{}
	for _, rr := range res.Runs {
		if r := rr.Run; r.Kind == results.KindRehearsal && !seen[r.Name] {
			seen[r.Name] = true
			rehearsals = append(rehearsals, r.Name)
		}
	}
	if len(rehearsals) > 0 {
		out = append(out, fmt.Sprintf("%s: %s answered by chexpercept's stand-in server (serve-baseline), not by the model named; see the table of servers.",
			capitalise(analysis.RehearsalNote), strings.Join(rehearsals, ", ")))
	}
	return out
}

func capitalise(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// serverTable names who answered each run: the server identity its
// manifest records (from eval's preflight). A mode none of whose runs
// records one (imports, readers, older runs) gets no table.
func (s *sectionDoc) serverTable() {
	known := false
	for _, rr := range s.runs {
		known = known || rr.Run.Server != ""
	}
	if !known {
		return
	}
	t := newTable(s.sec, "Servers "+s.on, "Model", "Server (identity at the preflight)", "Note")
	for _, rr := range s.runs {
		server, note := rr.Run.Server, ""
		if server == "" {
			server = NAText
		}
		if rr.Run.Kind == results.KindRehearsal {
			note = analysis.RehearsalNote
		}
		t.row(rr.Run.Name, server, note)
	}
}
