package fakemodel

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

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
		got, err := parseChat([]byte(tc.body), nil, true)
		ref, refErr := parseChatStream(strings.NewReader(tc.body))
		if !sameParse(got, err, ref, refErr) {
			t.Errorf("%s: parseChat %+v %v, the stream parser %+v %v", tc.name, got, err, ref, refErr)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v %v, want %+v", tc.name, got, err, tc.want)
		}
		if _, ok := parseFast([]byte(tc.body), true); !ok {
			t.Errorf("%s: the fast path gave up on a valid request", tc.name)
		}
	}
}

func sameParse(got *parsedRequest, err error, ref *parsedRequest, refErr error) bool {
	if (err == nil) != (refErr == nil) || err != nil && err.Error() != refErr.Error() {
		return false
	}
	return reflect.DeepEqual(got, ref)
}

// hostileBodies are malformed, hostile or unusual request bodies: the
// fast path must accept none that the stream parser rejects, and must
// read the ones it accepts exactly as the stream parser does.
func hostileBodies() []string {
	img := `{"type":"image_url","image_url":{"url":"data:image/png;base64,QUJD"}}`
	msg := func(content string) string {
		return `{"model":"m","messages":[{"role":"user","content":` + content + `}]}`
	}
	bodies := []string{
		msg(`"x"`), msg(`null`), msg(`nul`), msg(`nulll`), msg(`true`), msg(`{}`), msg(`[]`), msg(`[` + img + `]`),
		msg(`[` + img + `,` + img + `]`), msg(`[` + img + `,]`), msg(`[,` + img + `]`), msg(`[` + img + ` ` + img + `]`),
		msg(`"a\u0000b"`), msg("\"a\x00b\""), msg("\"a\x1fb\""), msg("\"tab\tinside\""), msg("\"\x7f\""),
		msg(`"\ud800"`), msg(`"\ud800\udc00"`), msg(`"\udc00\ud800"`), msg(`"\u12"`), msg(`"\u12G4"`), msg(`"\x"`), msg(`"\/\b\f\n\r\t\\\""`),
		msg(`"` + "\xc3\xa9" + `"`), msg(`"` + "\xc3" + `"`), msg(`"` + "\xed\xa0\x80" + `"`), msg(`"` + "\xf4\x90\x80\x80" + `"`),
		msg(`"x\\"`), msg(`"x\\\"`), msg(`"x\"`), msg(`"x`), msg(`"`),
		msg(`[{"type":"text","text":"a","text":"b"}]`), msg(`[{"type":"text","t\u0065xt":"a","text":"b"}]`),
		msg(`[{"type":"image_url","image_url":{"url":"data:,QUJD","url":"x"}}]`),
		msg(`[{"type":"image_url","image_url":"x"}]`), msg(`[{"type":"image_url","image_url":{"url":5}}]`),
		msg(`[{"type":"image_url","image_url":{"detail":"low"}},` + img + `]`),
		msg(`[{"type":"text","text":"t","image_url":{"url":"data:;base64,T0s="}},` + img + `]`),
		msg(`[{"type":5,"text":"a"},{"type":"text","text":null}]`), msg(`[1]`), msg(`[[]]`), msg(`[{"image_url":{"url":"a\"b"}}]`),
		`{"messages":[],"messages":[]}`, `{"model":"a","model":"b","messages":[]}`, `{"model":"a","mod\u0065l":"b","messages":[]}`,
		`{"messages":[{"content":"a","content":"b"}]}`, `{"messages":[{"content":"a"}],"x":{"k":1,"k":2}}`,
		`{"messages":[{"content":"a"}],"x":{"k":1,"\u006b":2}}`, `{"messages":[{"content":"a"}],"x":[{"k":1},{"k":2}]}`,
		`{"messages":[{"content":"a"}]}`, ` {"messages":[{"content":"a"}]} `, "\t\r\n{\"messages\" : [ { \"content\" : \"a\" } ] }",
		`{"messages":[{"content":"a"}]}garbage`, `{"messages":[{"content":"a"}]}}`, `{"messages":[{"content":"a"}]},`,
		`{"messages":[{"content":"a"}],}`, `{"messages":[{"content":"a"}]`, `{"messages":[{"content":"a"}] "x":1}`,
		`{"messages":[{"content":"a"}],"x":01}`, `{"messages":[{"content":"a"}],"x":-}`, `{"messages":[{"content":"a"}],"x":1.}`,
		`{"messages":[{"content":"a"}],"x":1e}`, `{"messages":[{"content":"a"}],"x":-0.5E+7}`, `{"messages":[{"content":"a"}],"x":+1}`,
		`{"messages":[{"content":"a"}],"x":.5}`, `{"messages":[{"content":"a"}],"x":1e5.5}`, `{"messages":[{"content":"a"}],"x":truefalse}`,
		`{"messages":[{"content":"a"}],"x":tru}`, `{"messages":[{"content":"a"}],"x":NaN}`, `{"messages":[{"content":"a"}],"x":[1,2,]}`,
		`{"messages":[{"content":"a"}],"x":{"a":}}`, `{"messages":[{"content":"a"}],"x":{"a"}}`, `{"messages":[{"content":"a"}],"x":{1:2}}`,
		`{"messages":[{"content":"a"}],'x':1}`, `{"messages":{}}`, `{"messages":"x"}`, `{"messages":[1]}`, `{"messages":null}`,
		`{"messages":[{"content":"a"}],"x":"\u00e9"}`, `{"messages":[{"content":"a"}],` + "\"x\xff\"" + `:1}`,
		"{\"messages\":[{\"content\":\"a\"}]\x00}", `{"messages":[{"content":"a"}],"x"  :  [ 1 , { } , [ ] ] }`,
		"", " ", "{", "}", "null", `"x"`, `{"messages":[{"content":"a"}]` + strings.Repeat(" ", 100),
		// Deep nesting, below and above the fast path's depth limit.
		`{"messages":[{"content":"a"}],"x":` + strings.Repeat("[", 900) + strings.Repeat("]", 900) + `}`,
		`{"messages":[{"content":"a"}],"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`,
		`{"messages":[{"content":"a"}],"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
		`{"messages":[{"content":"a"}],"x":` + strings.Repeat(`{"a":`, 2000) + "1" + strings.Repeat("}", 2000) + `}`,
		`{"messages":[{"content":"a"}],"x":` + strings.Repeat("[", 20000) + `}`,
		// Escapes and quotes in bulk: linear time, same decisions.
		msg(`"` + strings.Repeat(`\n`, 100000) + `"`), msg(`"` + strings.Repeat(`\"`, 100000) + `"`),
		msg(`"` + strings.Repeat(`\\`, 100000) + `\"`), msg(`"` + strings.Repeat(`a\`, 100000) + `"`),
		msg(`[` + strings.Repeat(`{"image_url":{"url":"`+strings.Repeat(`Q\/`, 1000)+`"}},`, 50) + img + `]`),
	}
	// Many members: duplicates found past the list's size, in a map.
	var many strings.Builder
	for i := 0; i < 200; i++ {
		many.WriteString(`"k` + strings.Repeat("x", i) + `":1,`)
	}
	bodies = append(bodies, `{"messages":[{"content":"a"}],"x":{`+many.String()+`"z":1}}`,
		`{"messages":[{"content":"a"}],"x":{`+many.String()+`"kxxx":1}}`,
		`{"messages":[{"content":"a"}],"x":{`+many.String()+`"k\u0078":1}}`)
	// A long base64 image with a bad byte at every position class.
	b64 := strings.Repeat("QUJDRA+/", 1000)
	for _, bad := range []string{"\x00", "\x1f", "\x80", "\xff", "\\", `\u0041`, "\xc3\xa9", `"`} {
		for _, at := range []int{0, 7, 8, 4001, len(b64) - 1} {
			bodies = append(bodies, msg(`[{"type":"image_url","image_url":{"url":"data:image/png;base64,`+b64[:at]+bad+b64[at:]+`"}}]`))
		}
	}
	return bodies
}

func TestParseChatHostile(t *testing.T) {
	fast := 0
	for i, body := range hostileBodies() {
		for _, hash := range []bool{true, false} {
			got, err := parseChat([]byte(body), nil, hash)
			ref, refErr := parseChatStream(strings.NewReader(body))
			if ref != nil && !hash {
				ref.firstImage = ""
			}
			if !sameParse(got, err, ref, refErr) {
				t.Errorf("body %d (%.80q): parseChat %+v %v, the stream parser %+v %v", i, body, got, err, ref, refErr)
			}
			p, ok := parseFast([]byte(body), hash)
			if ok {
				fast++
				if refErr != nil || !reflect.DeepEqual(p, ref) {
					t.Errorf("body %d (%.80q): the fast path accepted %+v, the stream parser %+v %v", i, body, p, ref, refErr)
				}
			}
		}
	}
	if fast == 0 {
		t.Error("the fast path accepted none of the bodies")
	}
}

// TestParseChatReadError: a body cut by a failed read is read by the
// stream parser, which meets the same error at the same place: a request
// that ended before the error parses, one cut short fails with the
// reader's error. A body over the size limit is refused as such (413)
// whatever it holds, even a request that ended before the limit: it is
// not parsed, so the server never holds it twice.
func TestParseChatReadError(t *testing.T) {
	limit := &http.MaxBytesError{Limit: 20}
	for _, tc := range []struct {
		body string
		err  error
		ok   bool
	}{
		{`{"messages":[{"content":"a lo`, limit, false},
		{`{"messages":[{"content":"a"}]}`, limit, false},
		{`{"messages":[{"content":"a"}]}  `, limit, false},
		{`{"messages":[{"cont`, io.ErrUnexpectedEOF, false},
		{`{"messages":[{"content":"a"}]}`, io.ErrUnexpectedEOF, true}, // the request ended before the error
	} {
		got, err := parseChat([]byte(tc.body), tc.err, true)
		if tc.ok != (err == nil) {
			t.Errorf("%q: %+v %v", tc.body, got, err)
		}
		var mbe *http.MaxBytesError
		if tc.err == limit {
			if !errors.As(err, &mbe) || got != nil {
				t.Errorf("%q: %+v %v, want the size limit's error", tc.body, got, err)
			}
			continue
		}
		ref, refErr := parseChatStream(io.MultiReader(strings.NewReader(tc.body), errReader{tc.err}))
		if !sameParse(got, err, ref, refErr) {
			t.Errorf("%q: parseChat %+v %v, the stream parser %+v %v", tc.body, got, err, ref, refErr)
		}
	}
}

// TestParseFastRealRequest: the bodies the OpenAI-compatible client sends
// (system text, questions, several images, an earlier answer) take the
// fast path and read as the stream parser reads them.
func TestParseFastRealRequest(t *testing.T) {
	var bodies [][]byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, b)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Answer: 1"},"finish_reason":"stop"}]}`)
	}))
	defer ts.Close()
	c := client(t, ts.URL+"/v1")
	for i := 0; i < 3; i++ {
		req := request(i)
		big := make([]byte, 200<<10)
		rand.Read(big)
		req.Messages[3].Images = append(req.Messages[3].Images, provider.NewImage(big))
		if _, err := c.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if len(bodies) != 3 {
		t.Fatalf("%d bodies", len(bodies))
	}
	for i, b := range bodies {
		p, ok := parseFast(b, true)
		ref, err := parseChatStream(bytes.NewReader(b))
		if !ok || err != nil || !reflect.DeepEqual(p, ref) || p.images != 4 || p.firstImage == "" {
			t.Errorf("body %d: fast %v %+v, stream %+v %v", i, ok, p, ref, err)
		}
	}
}

func FuzzParseChat(f *testing.F) {
	for _, b := range hostileBodies() {
		if len(b) < 4096 {
			f.Add([]byte(b))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ref, refErr := parseChatStream(bytes.NewReader(body))
		if p, ok := parseFast(body, true); ok && (refErr != nil || !reflect.DeepEqual(p, ref)) {
			t.Fatalf("the fast path accepted %+v, the stream parser %+v %v", p, ref, refErr)
		}
		got, err := parseChat(body, nil, true)
		if !sameParse(got, err, ref, refErr) {
			t.Fatalf("parseChat %+v %v, the stream parser %+v %v", got, err, ref, refErr)
		}
	})
}

// BenchmarkParseChat: a late turn's body, 7 images of 1 MB of base64.
func BenchmarkParseChat(b *testing.B) {
	var parts []string
	for i := 0; i < 7; i++ {
		img := make([]byte, 3<<18)
		rand.Read(img)
		parts = append(parts, `{"type":"image_url","image_url":{"url":"data:image/png;base64,`+provider.NewImage(img).Base64+`"}}`)
	}
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"Q\n(1) a\n(2) b"},` + strings.Join(parts, ",") + `]}],"temperature":0}`)
	b.SetBytes(int64(len(body)))
	b.Run("fast", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := parseChat(body, nil, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stream", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := parseChatStream(bytes.NewReader(body)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPrintableASCII: every byte value at every place of the word-wise
// check, beside every neighbour, against the byte-wise definition.
func TestPrintableASCII(t *testing.T) {
	for n := 0; n <= 40; n++ {
		for at := 0; at < n; at++ {
			for c := 0; c < 256; c++ {
				for _, nb := range []byte{'A', ' ', 0x1f, 0x7f, 0x80, 0} {
					s := bytes.Repeat([]byte{'Q'}, n)
					s[at] = byte(c)
					if at+1 < n {
						s[at+1] = nb
					}
					want := true
					for _, b := range s {
						want = want && b >= 0x20 && b < 0x80
					}
					if got := printableASCII(s); got != want {
						t.Fatalf("%q: %v, want %v", s, got, want)
					}
				}
			}
		}
	}
}

// TestReadBody: a body is read whole whatever its announced length; the
// buffer is allocated ahead only up to maxPrealloc, and grows to no more
// than twice what arrived.
func TestReadBody(t *testing.T) {
	srv, err := NewServer(ServerConfig{Policy: "random"})
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("0123456789"), 300_000) // 3 MB
	for _, tc := range []struct {
		name      string
		announced int64
		sent      []byte
	}{
		{"exact", int64(len(body)), body},
		{"unknown", -1, body},
		{"too small", 100, body},
		{"lying", 60 << 20, body[:10]},
		{"empty", 0, nil},
		{"small", 10, body[:10]},
	} {
		buf := srv.getBuf(tc.announced)
		if c := cap(*buf); c > maxPrealloc {
			t.Errorf("%s: %d bytes allocated ahead", tc.name, c)
		}
		got, err := readBody(iotest.OneByteReader(bytes.NewReader(tc.sent)), *buf, tc.announced)
		if err != nil || !bytes.Equal(got, tc.sent) {
			t.Errorf("%s: read %d bytes, %v", tc.name, len(got), err)
		}
		if tc.announced < 0 && cap(got) > 2*len(got)+512 {
			t.Errorf("%s: buffer of %d for %d bytes", tc.name, cap(got), len(got))
		}
		*buf = got
		srv.putBuf(buf)
	}
	limited := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(bytes.NewReader(body)), 1000)
	got, err := readBody(limited, nil, -1)
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) || len(got) != 1000 {
		t.Errorf("over the limit: %d bytes, %v", len(got), err)
	}
}
