package analysistest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
)

// SwitchesChecked is what RecheckReaderSwitches went through.
type SwitchesChecked struct {
	Rows int // rows of oracle mode recomputed
	// AtDetection counts the answers changed at stage 1 over those rows
	// (right_to_wrong + wrong_to_right).
	AtDetection int
}

// RecheckReaderSwitches recomputes every row of oracle mode in
// reportDir/ext_reader_switches.csv from samples.csv alone: the records
// on the row's path and stage that the reader's two arms (the runs
// human_<reader>_unaided and human_<reader>_aided, as read export names
// them) and the shown model (aid_run) all answered; of those, the ones
// where the unaided reader was right at the stage and the model wrong,
// and how many the aided reader then got wrong; and the other way round.
// It returns one line per disagreement.
func RecheckReaderSwitches(reportDir, mode string, recs []*benchmark.Record) (problems []string, checked SwitchesChecked, err error) {
	o, err := ReadOutcomes(reportDir, mode, recs)
	if err != nil {
		return nil, checked, err
	}
	header, rows, err := readTable(filepath.Join(reportDir, "ext_reader_switches.csv"))
	if err != nil {
		return nil, checked, err
	}
	get := column(header)
	cols := []string{"n_records", "model_wrong_reader_right", "right_to_wrong", "model_right_reader_wrong", "wrong_to_right"}
	for i, row := range rows {
		if get(row, "oracle_mode") != mode {
			continue
		}
		reader, model, path := get(row, "reader"), get(row, "aid_run"), benchmark.Path(get(row, "path"))
		stage, err := strconv.Atoi(get(row, "stage"))
		if err != nil {
			return nil, checked, fmt.Errorf("ext_reader_switches.csv row %d: stage %q", i+2, get(row, "stage"))
		}
		k := benchmark.Stage(stage)
		u, a := "human_"+reader+"_unaided", "human_"+reader+"_aided"
		var n, mw, rw, mr, wr int
		for key := range o.Path {
			if o.Path[key] != path || !benchmark.StageApplies(path, o.Heart[key], k) ||
				o.Correct[u][key] == nil || o.Correct[a][key] == nil || o.Correct[model][key] == nil {
				continue
			}
			n++
			ur, ar, mok := o.StageOwn(u, key, k), o.StageOwn(a, key, k), o.StageOwn(model, key, k)
			switch {
			case ur && !mok:
				mw++
				if !ar {
					rw++
				}
			case !ur && mok:
				mr++
				if ar {
					wr++
				}
			}
		}
		want := []string{strconv.Itoa(n), strconv.Itoa(mw), strconv.Itoa(rw), strconv.Itoa(mr), strconv.Itoa(wr)}
		got := make([]string, len(cols))
		for j, c := range cols {
			got[j] = get(row, c)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			problems = append(problems, fmt.Sprintf("ext_reader_switches.csv row %d (%s %s %d): %s %s, samples.csv gives %s",
				i+2, reader, path, stage, strings.Join(cols, ","), strings.Join(got, ","), strings.Join(want, ",")))
		}
		checked.Rows++
		if k == 1 {
			checked.AtDetection += rw + wr
		}
	}
	return problems, checked, nil
}
