package fakemodel

import (
	"reflect"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/provider"
)

func TestParseChat(t *testing.T) {
	cases := []struct {
		name, body string
		want       *parsedRequest
		err        string
	}{
		{"strings", `{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"Q \u00e9\n\"x\""}]}`,
			&parsedRequest{model: "m", texts: []string{"S", "Q é\n\"x\""}}, ""},
		{"parts and extras", `{"stream":false,"messages":[{"role":"user","name":"u","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,QUJD","detail":"high"}},{"type":"text","text":"b"},{"image_url":{"url":"x"}}]},{"role":"assistant","content":null,"tool_calls":[{"id":1}]}],"model":"late","temperature":0,"chat_template_kwargs":{"enable_thinking":false}}`,
			&parsedRequest{model: "late", texts: []string{"ab", ""}, images: 2, firstImage: provider.PayloadKey("QUJD")}, ""},
		{"escaped url", `{"messages":[{"content":[{"type":"image_url","image_url":{"url":"data:image\/png;base64,QU\/D+w=="}}]}]}`,
			&parsedRequest{texts: []string{""}, images: 1, firstImage: provider.PayloadKey("QU/D+w==")}, ""},
		{"model not a string", `{"model":5,"messages":[{"role":"user","content":"x"}]}`, &parsedRequest{texts: []string{"x"}}, ""},
		{"no messages", `{"model":"m"}`, nil, "messages is missing"},
		{"content number", `{"messages":[{"content":5}]}`, nil, "must be a string or a list"},
		{"not an object", `[1]`, nil, "expected"},
		{"truncated", `{"messages":[{"content":"x"`, nil, "EOF"},
		{"bad utf8", "{\"messages\":[{\"content\":\"\xff\"}]}", nil, "UTF-8"},
	}
	for _, tc := range cases {
		got, err := parseChat(strings.NewReader(tc.body))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v %v, want %+v", tc.name, got, err, tc.want)
		}
	}
}
