package reviewlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	img1  = "1111111111111111111111111111111111111111111111111111111111111111"
	img2  = "2222222222222222222222222222222222222222222222222222222222222222"
	mask1 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)

func TestLogResolve(t *testing.T) {
	data := strings.Join([]string{
		`{"key_id":"edema_a_positive_0","decision":"reject","reviewer":"r1","image_sha256":"` + img1 + `","mask_sha256":"` + mask1 + `"}`,
		`{"key_id":"edema_a_positive_0","decision":"accept","reviewer":"r1","image_sha256":"` + img1 + `","mask_sha256":"` + mask1 + `"}`,
		``,
		`{"key_id":"edema_b_negative_0","decision":"accept","image_sha256":"` + img1 + `","mask_sha256":null}`,
		`{"key_id":"edema_c_positive_0","decision":"reject"}`,
		`{"key_id":"edema_d_positive_0","decision":"disputed","reviewers":["a","b"]}`,
		`{"key_id":"edema_e_positive_0","decision":"unsure"}`,
		`{"key_id":"edema_g_positive_0","decision":"pending","reviewers":["a"]}`,
		`{"key_id":"edema_f_positive_0","decision":"accept","image_sha256":"` + img1 + `","mask_sha256":"` + mask1 + `"}`,
	}, "\n")
	l, err := parseLog("reviews.jsonl", strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key, img, mask, want, decision string
	}{
		{"edema_a_positive_0", img1, mask1, Accepted, "accept"}, // the later line wins
		{"edema_a_positive_0", img2, mask1, Stale, "accept"},    // image changed
		{"edema_a_positive_0", img1, img2, Stale, "accept"},     // mask changed
		{"edema_b_negative_0", img1, "", Accepted, "accept"},
		{"edema_b_negative_0", img2, "", Stale, "accept"},
		{"edema_c_positive_0", img1, mask1, Rejected, "reject"},
		{"edema_d_positive_0", img1, mask1, Disputed, "disputed"},
		{"edema_e_positive_0", img1, mask1, Missing, "unsure"},
		{"edema_g_positive_0", img1, mask1, Missing, "pending"},
		{"edema_zz_positive_0", img1, mask1, Missing, ""},
		{"edema_f_positive_0", img1, "", Stale, "accept"},
	}
	for _, tc := range tests {
		got := l.Resolve(tc.key, tc.img, tc.mask)
		if got.Status != tc.want || got.Decision != tc.decision {
			t.Errorf("%s (%s,%s): got %s/%s, want %s/%s", tc.key, tc.img[:2], tc.mask, got.Status, got.Decision, tc.want, tc.decision)
		}
	}
	if l.Len() != 7 {
		t.Errorf("Len = %d, want 7", l.Len())
	}
}

func TestLogErrors(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"syntax", "{\"key_id\":\"x\",\n", "reviews.jsonl:1: not valid JSON"},
		{"array", `[1]`, "reviews.jsonl:1: not a JSON object"},
		{"no key", `{"decision":"accept"}`, "reviews.jsonl:1: field key_id is missing"},
		{"bad decision", "\n" + `{"key_id":"k","decision":"maybe"}`, `reviews.jsonl:2: key_id k: decision "maybe"`},
		{"bad digest", `{"key_id":"k","decision":"accept","image_sha256":"ABC"}`, "reviews.jsonl:1: field image_sha256 is not 64 lowercase hex digits"},
		{"type", `{"key_id":"k","decision":3}`, "reviews.jsonl:1: field decision is not a string"},
	}
	for _, tc := range tests {
		_, err := parseLog("reviews.jsonl", strings.NewReader(tc.data))
		if err == nil || !strings.HasPrefix(err.Error(), "reviews "+tc.want) {
			t.Errorf("%s: got %v, want prefix %q", tc.name, err, "reviews "+tc.want)
		}
	}
}

func TestReadLogFile(t *testing.T) {
	if _, err := ReadLog(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file: %v", err)
	}
	p := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(p, []byte(`{"key_id":"k","decision":"accept"}`), 0o644)
	l, err := ReadLog(p)
	if err != nil || l.Latest("k") == nil {
		t.Fatalf("ReadLog: %v", err)
	}
}

func TestResolveDecisions(t *testing.T) {
	d := func(ds ...string) []ReviewerDecision {
		var out []ReviewerDecision
		for i, x := range ds {
			out = append(out, ReviewerDecision{Reviewer: string(rune('a' + i)), Decision: x})
		}
		return out
	}
	tests := []struct {
		name     string
		assigned []ReviewerDecision
		admin    string
		want     string
	}{
		{"admin accept overrides", d("reject", "reject"), "accept", "accept"},
		{"admin reject overrides", d("accept"), "reject", "reject"},
		{"unanimous accept", d("accept", "accept"), "", "accept"},
		{"unanimous reject", d("reject"), "", "reject"},
		{"accept and reject", d("accept", "reject"), "", "disputed"},
		{"accept and unsure", d("accept", "unsure"), "", "disputed"},
		{"accept and missing", d("accept", ""), "", "pending"},
		{"unsure and missing", d("unsure", ""), "", "pending"},
		{"none decided", d("", ""), "", "pending"},
		{"accept, reject and missing", d("accept", "reject", ""), "", "disputed"},
		{"all unsure", d("unsure", "unsure"), "", "unsure"},
		{"nobody assigned", nil, "", "pending"},
	}
	for _, tc := range tests {
		if got := ResolveDecisions(tc.assigned, tc.admin); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}
