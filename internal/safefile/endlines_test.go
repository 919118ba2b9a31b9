package safefile

import (
	"errors"
	"strings"
	"testing"
)

func TestEndLines(t *testing.T) {
	for _, tc := range []struct {
		name, in    string
		first, last string
		blank       bool
		tooLong     bool
	}{
		{"empty", "", "", "", true, false},
		{"blank", " \n\r\n\t", "", "", true, false},
		{"one line", "a", "a", "a", false, false},
		{"one line, newline", "a\r\n", "a", "a", false, false},
		{"two lines", "\n a \nb\nc \n\n", "a", "c", false, false},
		{"long middle line", "a\n" + strings.Repeat("x", 40) + "\nb\n", "a", "b", false, false},
		{"long first line", strings.Repeat("x", 17) + "\nb\n", "", "", false, true},
		{"long last line", "a\n" + strings.Repeat("x", 17), "", "", false, true},
		{"at the limit", strings.Repeat("x", 16) + "\n" + strings.Repeat("y", 16), strings.Repeat("x", 16), strings.Repeat("y", 16), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, last, blank, err := EndLines(strings.NewReader(tc.in), int64(len(tc.in)), 16)
			if tc.tooLong {
				if !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("err %v, want ErrLineTooLong", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(first) != tc.first || string(last) != tc.last || blank != tc.blank {
				t.Errorf("got %q, %q, blank %v; want %q, %q, blank %v", first, last, blank, tc.first, tc.last, tc.blank)
			}
		})
	}
}
