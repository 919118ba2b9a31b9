package review

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/source"
)

var importTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func sourceMap(cases []*source.Case) map[string]*source.Case {
	m := map[string]*source.Case{}
	for _, c := range cases {
		m[c.KeyID()] = c
	}
	return m
}

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMapDecision(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"y", "accept"}, {"YES", "accept"}, {"1", "accept"}, {"True", "accept"}, {"accept", "accept"}, {"x", "accept"}, {" X ", "accept"},
		{"n", "reject"}, {"No", "reject"}, {"0", "reject"}, {"false", "reject"}, {"REJECT", "reject"},
		{"", ""}, {"  ", ""},
	} {
		got, err := mapDecision(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"maybe", "unsure", "2", "ok"} {
		if _, err := mapDecision(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestImportPackRoundTrip: a pack's sheets, filled in, come back with the
// sheet's digests and the annotator folder as reviewer, and the build
// accepts exactly the accepted rows.
func TestImportPackRoundTrip(t *testing.T) {
	t.Parallel()
	fx := makeFixture(t, []string{"edema"}, 2, 1)
	out := filepath.Join(t.TempDir(), "packs")
	if _, err := Pack(context.Background(), fx.Cases, out, PackOptions{Reviewers: 1}); err != nil {
		t.Fatal(err)
	}
	sheet := filepath.Join(out, "annotator_A/edema/positive/review_sheet.csv")
	data, _ := os.ReadFile(sheet)
	lines := strings.Split(strings.TrimSuffix(string(data), "\r\n"), "\r\n")
	lines[1] += "Yes"
	lines[2] += "n"
	writeFile(t, sheet, strings.Join(lines, "\r\n")+"\r\n")
	neg := filepath.Join(out, "annotator_A/edema/negative/review_sheet.csv") // left empty

	got, err := ReadSheets([]string{sheet, neg}, ImportOptions{Now: importTime})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Decision != "accept" || got[1].Decision != "reject" || got[0].Reviewer != "annotator_A" || got[0].Time != "2026-03-04T05:06:07Z" {
		t.Fatalf("lines %+v", got)
	}
	logPath := filepath.Join(t.TempDir(), "reviews.jsonl")
	writeFile(t, logPath, `{"key_id":"other","decision":"reject"}`) // no final newline
	if err := AppendLog(logPath, got); err != nil {
		t.Fatal(err)
	}
	l, err := reviewlog.ReadLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	c0, c1 := fx.Cases[0], fx.Cases[1]
	img0, _ := source.ImageSHA256(c0)
	ld, _ := source.NewLoader(nil, nil, defaultCfg(), "", nil)
	m0, _ := ld.CandidateMask(c0)
	if r := l.Resolve(c0.KeyID(), img0, source.MaskSHA256(m0)); r.Status != reviewlog.Accepted {
		t.Errorf("accepted row resolves %+v", r)
	}
	if r := l.Resolve(c1.KeyID(), "", ""); r.Status != reviewlog.Rejected {
		t.Errorf("rejected row resolves %+v", r)
	}
	if l.Latest("other") == nil {
		t.Error("the existing line was damaged by the append")
	}
}

// TestAppendLogRefusesLinks: the log is appended to only as a regular
// file of its own; a link (even to a regular file) or a FIFO is refused
// and the file behind it is left as it was.
func TestAppendLogRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.jsonl")
	writeFile(t, target, "{}\n")
	link := filepath.Join(dir, "reviews.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	line := []*reviewlog.Line{{KeyID: "k", Decision: reviewlog.DecisionAccept}}
	for _, tc := range []struct{ path, want string }{
		{link, "symbolic link"},
		{fifo, "not a regular file"},
	} {
		err := AppendLog(tc.path, line)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("AppendLog(%s): %v, want an error naming the file and %q", tc.path, err, tc.want)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "{}\n" {
		t.Errorf("the linked file became %q", b)
	}
}

func TestImportReferenceSheets(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 3, 1)
	dir := t.TempDir()
	k := func(i int) string { return fx.Cases[i].KeyID() }
	pos := writeFile(t, filepath.Join(dir, "annotator_C", "sub", "positive.csv"),
		"\xef\xbb\xbfkey_id,dicom_id,target,pair_id,mapped_location,segmentation_source,plot_path,optimal?\r\n"+
			k(0)+",fx001,edema,x,\"a, b\",manifest,p.png,1\r\n"+
			k(1)+",fx002,edema,x,a,manifest,p.png,n\r\n"+
			k(2)+",fx003,edema,x,a,manifest,p.png,\r\n")
	neg := writeFile(t, filepath.Join(dir, "negative.csv"), "lesion,key_id,dicom_id,optimal\nedema,"+k(3)+",fx004,x\n")

	// Without a source the rows cannot be bound; the error says so, and
	// matches ErrNeedsSource for the command to name its --source.
	if _, err := ReadSheets([]string{pos}, ImportOptions{Now: importTime}); !errors.Is(err, ErrNeedsSource) || !strings.Contains(err.Error(), "the row carries no digests") ||
		strings.Contains(err.Error(), "--") {
		t.Errorf("no source: %v", err)
	}
	opt := ImportOptions{Now: importTime, Source: sourceMap(fx.Cases)}
	got, err := ReadSheets([]string{pos, neg}, opt)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ key, dec, rev string }{{k(0), "accept", "annotator_C"}, {k(1), "reject", "annotator_C"}, {k(3), "accept", "import"}}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].KeyID != w.key || got[i].Decision != w.dec || got[i].Reviewer != w.rev {
			t.Errorf("line %d: %+v, want %+v", i, got[i], w)
		}
	}
	img0, _ := source.ImageSHA256(fx.Cases[0])
	if got[0].ImageSHA256 == nil || *got[0].ImageSHA256 != img0 || got[0].MaskSHA256 == nil || got[2].MaskSHA256 != nil {
		t.Errorf("digests not bound: %+v", got[0])
	}
	// Legacy rule: any non-empty optimal? cell accepts, even "n".
	opt.Legacy = true
	opt.Reviewer = "dr-x"
	got, err = ReadSheets([]string{pos}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Decision != "accept" || got[1].Reviewer != "dr-x" {
		t.Errorf("legacy: %+v", got)
	}
}

func TestImportErrors(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 1, 0)
	dir := t.TempDir()
	k := fx.Cases[0].KeyID()
	hdr := strings.Join(ReviewSheetHeader, ",") + "\r\n"
	dig := strings.Repeat("a", 64)
	tests := []struct{ name, data, want string }{
		{"bad cell", hdr + k + ",edema,positive," + dig + "," + dig + ",,,maybe\r\n", `:2: decision "maybe"`},
		{"bad digest", hdr + k + ",edema,positive,ABC,,,,y\r\n", ":2: image_sha256"},
		{"unknown key", hdr + "edema_zz_positive_0,edema,positive,,,,,y\r\n", "key_id edema_zz_positive_0: not in the source"},
		{"header", "a,b,c\r\n1,2,3\r\n", ":1: header is neither"},
		{"ragged", hdr + "a,b\r\n", ":2:"},
		// CSV syntax errors once made the import panic.
		{"bare quote row", hdr + k + ",edema,positive,,,,,y\r\n\"bad\r\n", `:3: parse error on line 3, column 6: extraneous or missing " in quoted-field`},
		{"bare quote in field", hdr + "a\"b,edema,positive,,,,,y\r\n", `:2: parse error on line 2, column 2: bare " in non-quoted-field`},
	}
	for _, tc := range tests {
		p := writeFile(t, filepath.Join(dir, tc.name+".csv"), tc.data)
		_, err := ReadSheets([]string{p}, ImportOptions{Now: importTime, Source: sourceMap(fx.Cases)})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing imported") {
			t.Errorf("%s: %v (want %q)", tc.name, err, tc.want)
		}
	}
	if _, err := ReadSheets([]string{filepath.Join(dir, "missing.csv")}, ImportOptions{}); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing sheet: %v", err)
	}
}

// TestImportIntoDB: imported rows become decisions of (new) reviewers that
// join the case's assignment, and resolve by the §4 rule.
func TestImportIntoDB(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 2, 0)
	s, _ := initStore(t, fx, 1, 1)
	ctx := context.Background()
	decideAs(t, s, fx.Cases[0].KeyID(), map[string]string{"r1": "accept"})
	decideAs(t, s, fx.Cases[1].KeyID(), map[string]string{"r1": "accept"})
	dir := t.TempDir()
	p := writeFile(t, filepath.Join(dir, "annotator_B", "negative.csv"),
		"key_id,dicom_id,target,pair_id,mapped_location,segmentation_source,plot_path,optimal?\r\n"+
			fx.Cases[0].KeyID()+",,edema,x,a,manifest,,y\r\n"+fx.Cases[1].KeyID()+",,edema,x,a,manifest,,no\r\n")
	lines, err := ReadSheets([]string{p}, ImportOptions{Now: importTime, Source: sourceMap(fx.Cases)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ImportLines(ctx, lines); err != nil {
		t.Fatal(err)
	}
	res, _ := s.ResolvedLines(ctx)
	if len(res) != 2 || res[0].Decision != "accept" || res[1].Decision != "disputed" || strings.Join(res[1].Reviewers, ",") != "r1,annotator_B" {
		t.Errorf("resolved %+v %+v", res[0], res[1])
	}
	// The imported reviewer has no token and cannot sign in.
	if u, _ := s.accounts().Authenticate(ctx, ""); u != nil {
		t.Error("empty token signs in")
	}
	s.SetLocked(ctx, true)
	if err := s.ImportLines(ctx, lines); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("import while locked: %v", err)
	}
	s.SetLocked(ctx, false)
	bad := []*reviewlog.Line{{KeyID: "edema_nope_positive_0", Decision: "accept", Reviewer: "x", Time: "t"}}
	if err := s.ImportLines(ctx, bad); err == nil || !strings.Contains(err.Error(), "not a case") {
		t.Errorf("unknown key: %v", err)
	}
}

// TestImportReviewerNames: a reviewer name, given or taken from an
// annotator_<X> folder, follows the one name rule (reviewlog.CheckName):
// a bidirectional override, a line break or a space is refused with a
// line that shows it escaped, never stored.
func TestImportReviewerNames(t *testing.T) {
	fx := makeFixture(t, []string{"edema"}, 1, 0)
	k := fx.Cases[0].KeyID()
	sheet := strings.Join(ReviewSheetHeader, ",") + "\r\n" + k + ",edema,positive,,,,,y\r\n"
	for _, tc := range []struct {
		name, reviewer, folder, want string
	}{
		{"plain", "dr.smith-2", "", ""},
		{"bidi override", "r1\u202egnp.exe", "", `reviewer name "r1\u202egnp.exe"`},
		{"newline", "r1\nadmin", "", `reviewer name "r1\nadmin"`},
		{"space", "Dr Smith", "", `reviewer name "Dr Smith"`},
		{"too long", strings.Repeat("a", 65), "", "reviewer name"},
		{"folder", "", "annotator_b", ""},
		{"folder with a bidi override", "", "annotator_\u202eb", `(taken from its annotator_<X> folder)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.folder != "" {
				dir = filepath.Join(dir, tc.folder)
			}
			p := writeFile(t, filepath.Join(dir, "review_sheet.csv"), sheet)
			lines, err := ReadSheets([]string{p}, ImportOptions{Now: importTime, Source: sourceMap(fx.Cases), Reviewer: tc.reviewer})
			if tc.want == "" {
				if err != nil || len(lines) != 1 {
					t.Fatalf("%d lines, %v", len(lines), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.ContainsAny(err.Error(), "\u202e") ||
				(tc.folder == "" && strings.Contains(err.Error(), "\n")) {
				t.Errorf("got %v, want a refusal containing %q, the name escaped", err, tc.want)
			}
		})
	}
}

// TestAppendLogRefusesForeignFiles: decisions are appended only to a file
// that is recognisably a reviews log; any other file, and any file when
// there is nothing to append, is left byte for byte as it was.
func TestAppendLogRefusesForeignFiles(t *testing.T) {
	line := []*reviewlog.Line{{KeyID: "k", Decision: reviewlog.DecisionAccept}}
	dec := `{"key_id":"a","decision":"reject"}`
	long := strings.Repeat("x", 2<<20)
	for _, tc := range []struct {
		name, content string
		lines         []*reviewlog.Line
		want          string // "" when the append must succeed
	}{
		{"text", "my notes, not a reviews log", line, "first line is not a decision"},
		{"json but not a decision", `{"a":1}` + "\n", line, "first line is not a decision"},
		{"decisions then text", dec + "\nnotes\n", line, "last line is not a decision"},
		{"text then decisions", "notes\n" + dec + "\n", line, "first line is not a decision"},
		{"one long line", long, line, "longer than"},
		{"nothing to append, foreign", "my notes", nil, ""},
		{"nothing to append, no final newline", dec, nil, ""},
		{"empty", "", line, ""},
		{"blank", "\n\n", line, ""},
		{"log", dec + "\n" + dec + "\n", line, ""},
		{"log without final newline", dec, line, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.jsonl")
			writeFile(t, path, tc.content)
			err := AppendLog(path, tc.lines)
			got, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
					t.Errorf("AppendLog: %v, want one line naming %s and %q", err, path, tc.want)
				}
				if string(got) != tc.content {
					t.Errorf("the refused file changed: %d bytes, was %d", len(got), len(tc.content))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.lines) == 0 {
				if string(got) != tc.content {
					t.Errorf("nothing to append, yet the file became %q", got)
				}
				return
			}
			l, err := reviewlog.ReadLog(path)
			if err != nil {
				t.Fatal(err)
			}
			if l.Latest("k") == nil {
				t.Errorf("the decision was not appended: %q", got)
			}
		})
	}
}
