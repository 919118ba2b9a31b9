package pycsv

import "testing"

func TestRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows [][]string
		want string
	}{
		{"none", nil, ""},
		{"plain", [][]string{{"a", "b"}, {"c"}}, "a,b\r\nc\r\n"},
		{"empty fields", [][]string{{"", "", ""}}, ",,\r\n"},
		{"comma", [][]string{{"b,c"}}, "\"b,c\"\r\n"},
		{"quote doubled", [][]string{{`say "hi"`}}, "\"say \"\"hi\"\"\"\r\n"},
		{"leading space unquoted", [][]string{{" lead"}}, " lead\r\n"},
		{"newline kept", [][]string{{"two\nlines"}}, "\"two\nlines\"\r\n"},
		{"carriage return", [][]string{{"a\rb"}}, "\"a\rb\"\r\n"},
	} {
		if got := string(Rows(tc.rows...)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
