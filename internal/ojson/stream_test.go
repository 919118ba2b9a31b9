package ojson

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestParseObjectStream(t *testing.T) {
	for _, c := range []struct {
		name, in string
		max      int64
		members  string // key=compact value;… read before the error
		err      string // "" = none
	}{
		{"members in order", ` {"b": {"x": [1, 2.50]}, "a": "s", "b": null}` + "\n", 100, `b={"x":[1,2.50]};a="s";b=null`, ""},
		{"empty object", `{}`, 100, "", ""},
		{"NUL at byte 0", "\x00\x00\x00", 100, "", "line 1, column 1: invalid character '\\x00' at start of value"},
		{"not valid on line 3", "{\"a\": 1,\n\"b\": 2,\n  \"c\" 3}", 100, "a=1;b=2", "line 3, column 7:"},
		{"cut short", `{"a": 1, "b": [1,`, 100, "a=1", "unexpected end of input"},
		{"an array", `[{"a": 1}]`, 100, "", "the top level is a array, not an object"},
		{"a string", `"x"`, 100, "", "the top level is a string, not an object"},
		{"trailing data", `{"a": 1} {"b": 2}`, 100, "a=1", "line 1, column 10: unexpected data after the top-level value"},
		{"invalid UTF-8", "{\"a\": \"\xff\"}", 100, "", "line 1, column"},
		{"member at the cap", `{"a": "` + strings.Repeat("x", 98) + `"}`, 100, `a="` + strings.Repeat("x", 98) + `"`, ""},
		{"member over the cap", `{"a": 1, "b": "` + strings.Repeat("x", 99) + `"}`, 100, "a=1", `member "b": value longer than 100 bytes`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			err := ParseObjectStream(strings.NewReader(c.in), c.max, func(k string, v *Value) error {
				got = append(got, k+"="+string(MarshalCompact(v)))
				return nil
			})
			if m := strings.Join(got, ";"); m != c.members {
				t.Errorf("members %q, want %q", m, c.members)
			}
			if c.err == "" {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line containing %q", err, c.err)
			}
		})
	}
}

// Each value given to fn is what Parse makes of it, Kind and all.
func TestParseObjectStreamAsParse(t *testing.T) {
	in := `{"k1": {"n": 1e400, "s": "\u00e9\ud83d\ude00", "a": [true, false, null, -0.0], "d": {"x": 1, "x": 2}}}`
	whole, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := MarshalCompact(whole.O[0].Value)
	err = ParseObjectStream(strings.NewReader(in), 1<<20, func(k string, v *Value) error {
		got := MarshalCompact(v)
		if string(got) != string(want) || len(Duplicates(v)) != 1 {
			t.Errorf("%s: %s (%d duplicates), want %s", k, got, len(Duplicates(v)), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	if err := ParseObjectStream(strings.NewReader(in), 1<<20, func(string, *Value) error { return stop }); err != stop {
		t.Errorf("fn's error came back as %v", err)
	}
}

// endless is a ReadSeeker of an endless run of one byte after a prefix;
// it fails a read once more than max bytes were asked of it.
type endless struct {
	prefix string
	fill   byte
	n, max int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n > e.max {
		return 0, fmt.Errorf("read %d bytes, past %d", e.n, e.max)
	}
	for i := range p {
		if e.n+int64(i) < int64(len(e.prefix)) {
			p[i] = e.prefix[e.n+int64(i)]
		} else {
			p[i] = e.fill
		}
	}
	e.n += int64(len(p))
	return len(p), nil
}

func (e *endless) Seek(off int64, whence int) (int64, error) {
	if whence != io.SeekStart {
		return 0, errors.New("seek: only from the start")
	}
	e.n = off
	return off, nil
}

// A stream invalid at its first byte, or with an endless member, is
// refused after a bounded read, not read whole.
func TestParseObjectStreamStopsEarly(t *testing.T) {
	const max = 1 << 20
	for _, c := range []struct {
		name   string
		src    *endless
		err    error
		errMsg string
	}{
		{"NUL bytes", &endless{fill: 0, max: 64 * max}, nil, "line 1, column 1:"},
		{"an endless string", &endless{prefix: `{"a": "`, fill: 'x', max: 64 * max}, ErrMemberTooLarge, ""},
		{"endless white space", &endless{prefix: `{"a": 1,`, fill: ' ', max: 64 * max}, ErrMemberTooLarge, "more than 1048576 bytes without a complete member"},
		{"an endless name", &endless{prefix: `{"a": 1, "`, fill: 'n', max: 64 * max}, ErrMemberTooLarge, ""},
		{"an endless array", &endless{prefix: `{"a": [`, fill: '[', max: 64 * max}, nil, "line 1, column"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var read int64
			err := ParseObjectStream(&readCounter{c.src, &read}, max, func(string, *Value) error { return nil })
			if err == nil || (c.err != nil && !errors.Is(err, c.err)) || !strings.Contains(err.Error(), c.errMsg) {
				t.Fatalf("err %v, want %v %q", err, c.err, c.errMsg)
			}
			if read > 4*max {
				t.Errorf("read %d bytes before refusing, want at most %d", read, 4*max)
			}
		})
	}
}

// readCounter counts the bytes read before the first seek (the parse;
// a seek starts the count of the error's line and column).
type readCounter struct {
	rs   io.ReadSeeker
	read *int64
}

func (r *readCounter) Read(p []byte) (int, error) {
	n, err := r.rs.Read(p)
	if r.read != nil {
		*r.read += int64(n)
	}
	return n, err
}

func (r *readCounter) Seek(off int64, whence int) (int64, error) {
	r.read = nil
	return r.rs.Seek(off, whence)
}
