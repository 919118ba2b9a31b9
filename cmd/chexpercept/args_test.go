package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestPositionalArgErrorsNameTheArgument(t *testing.T) {
	t.Parallel()
	cmd := &cobra.Command{Use: "rescore RUN_DIR --parse-mode MODE"}
	some := &cobra.Command{Use: "merge DIR... --out RESULTS_DIR"}
	for _, tc := range []struct {
		name  string
		check cobra.PositionalArgs
		cmd   *cobra.Command
		args  []string
		want  string // "" = accepted
	}{
		{"exact, none", needArgs("RUN_DIR"), cmd, nil, "missing RUN_DIR (usage: rescore RUN_DIR --parse-mode MODE)"},
		{"exact, one", needArgs("RUN_DIR"), cmd, []string{"r"}, ""},
		{"exact, two", needArgs("RUN_DIR"), cmd, []string{"r", "x"}, `unexpected argument "x"`},
		{"exact pair, one", needArgs("A", "B"), cmd, []string{"a"}, "missing B "},
		{"some, none", needSomeArgs("DIR"), some, nil, "missing DIR (usage: merge DIR... --out RESULTS_DIR)"},
		{"some, three", needSomeArgs("DIR"), some, []string{"a", "b", "c"}, ""},
	} {
		err := tc.check(tc.cmd, tc.args)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
