package runs

import (
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/ojson"
)

func TestRelImage(t *testing.T) {
	const key = "edema_s1_negative_0"
	for _, c := range []struct{ in, want, err string }{
		{"/data/ref/chexpercept/" + key + "/detection_qa/xray.png", "chexpercept/" + key + "/detection_qa/xray.png", ""},
		{`C:\bench\chexpercept\` + key + `\contour_qa\a.png`, "chexpercept/" + key + "/contour_qa/a.png", ""},
		// the last occurrence wins: a benchmark folder itself named chexpercept
		{"/x/chexpercept/" + key + "/chexpercept/" + key + "/detection_qa/xray.png", "chexpercept/" + key + "/detection_qa/xray.png", ""},
		{"chexpercept/" + key + "/detection_qa/xray.png", "chexpercept/" + key + "/detection_qa/xray.png", ""},
		{"/x/chexpercept/other_key/detection_qa/xray.png", "", "not under"},
		{"/x/mychexpercept/" + key + "/detection_qa/xray.png", "", "not under"},
		{"/x/chexpercept/" + key + "/", "", "names no file"},
		{"/x/chexpercept/" + key + "/../y/xray.png", "", "leaves its record folder"},
		{"/x/chexpercept/" + key + "/a//b.png", "", "leaves its record folder"},
	} {
		got, err := relImage(c.in, key)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want %q", c.in, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestReadHistory(t *testing.T) {
	const key = "k_1"
	for _, c := range []struct{ in, err string }{
		{`[["q", ["/b/chexpercept/k_1/detection_qa/xray.png"], "Answer: 1"], ["q2", [], "Answer: 1", "raw"]]`, ""},
		{`{}`, "not an array"},
		{`[["q", [], "a", "b", "c"]]`, "chat_history[0]: want"},
		{`[["q", "x.png", "a"]]`, "chat_history[0][1] is a string"},
		{`[["q", [3], "a"]]`, "chat_history[0][1][0] is a number"},
		{`[[1, [], "a"]]`, "chat_history[0][0] is a number"},
		{`[["q", [], null]]`, "chat_history[0][2] is a null"},
	} {
		v, err := ojson.Parse([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		h, err := readHistory(v, key)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || len(h) != 2 || h[1].original == nil || *h[1].original != "raw" || h[0].images[0] != "chexpercept/k_1/detection_qa/xray.png" {
			t.Errorf("%s: %+v %v", c.in, h, err)
		}
	}
	if _, err := readHistory(nil, key); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing chat_history: %v", err)
	}
}

func TestReadUsage(t *testing.T) {
	v, _ := ojson.Parse([]byte(`{"model_id":"gpt-5.4","num_calls":2,"per_call":[
		{"input_tokens":10,"cached_input_tokens":5,"output_tokens":3,"thinking_tokens":1,"total_tokens":13,"cost_usd":0.5},
		{"input_tokens":20,"cached_input_tokens":0,"output_tokens":4,"thinking_tokens":0,"total_tokens":24,"cost_usd":0.0}]}`))
	pc, id, err := readUsage(v)
	if err != nil || id != "gpt-5.4" || len(pc) != 2 || pc[0].use.CachedInputTokens != 5 || pc[0].cost != 0.5 || pc[1].use.TotalTokens != 24 {
		t.Fatalf("%+v %q %v", pc, id, err)
	}
	for _, c := range []struct{ in, err string }{
		{`[]`, "not an object"},
		{`{"model_id":"m"}`, "per_call is missing"},
		{`{"per_call":[{"input_tokens":1.5}]}`, "per_call[0].input_tokens is 1.5"},
		{`{"per_call":[{"cost_usd":"free"}]}`, "per_call[0].cost_usd"},
	} {
		v, _ := ojson.Parse([]byte(c.in))
		if _, _, err := readUsage(v); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want %q", c.in, err, c.err)
		}
	}
	if pc, _, err := readUsage(nil); pc != nil || err != nil {
		t.Errorf("absent token_usage: %v %v", pc, err)
	}
}
