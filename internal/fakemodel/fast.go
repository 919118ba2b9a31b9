package fakemodel

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/chexpercept/chexpercept/internal/provider"

	"github.com/go-json-experiment/json/jsontext"
)

// The fast reading of a request body held whole in memory. A request
// re-sends the conversation's earlier images on every turn, so nearly
// all of its bytes are base64 inside image URLs; a token decoder checks
// them one byte at a time as it skips them. Here a string's end is found
// with bytes.IndexByte (a vector search) for the closing quote, escapes
// stepped over, and its contents checked eight bytes at a time: printable
// ASCII without a backslash is a JSON string as it stands; any other
// string is checked and decoded by jsontext.AppendUnquote.
//
// parseFast accepts a body only when parseChatStream would accept it with
// the same result: it checks what the stream decoder checks (the grammar,
// UTF-8, control characters and escapes in strings, duplicate names in
// every object, nesting depth) and gives up (ok false) at the first thing
// it does not accept, leaving the decision and the error message to
// parseChatStream. It never decides a rejection itself.

// fastMaxDepth bounds nesting. Deeper bodies go to the stream decoder,
// whose own limit is higher, so the decision is still its.
const fastMaxDepth = 1000

// fastManyNames is the member count from which an object's names are
// checked for duplicates with a map rather than a list.
const fastManyNames = 16

type fastParser struct {
	b     []byte
	i     int
	depth int
}

func parseFast(b []byte, hashImage bool) (*parsedRequest, bool) {
	f := &fastParser{b: b}
	p := &parsedRequest{}
	f.ws()
	if !f.open('{') {
		return nil, false
	}
	sawMessages := false
	ok := f.object(func(name []byte) bool {
		switch string(name) {
		case "model":
			if f.peek() == '"' {
				v, ok := f.str()
				p.model = string(v)
				return ok
			}
			return f.skip()
		case "messages":
			sawMessages = true
			return f.messages(p, hashImage)
		}
		return f.skip()
	})
	// What follows the request's object is never read by the stream
	// decoder either (the server drains it).
	return p, ok && sawMessages
}

func (f *fastParser) messages(p *parsedRequest, hashImage bool) bool {
	if !f.open('[') {
		return false
	}
	return f.array(func() bool {
		if !f.open('{') {
			return false
		}
		text := ""
		ok := f.object(func(name []byte) bool {
			if string(name) != "content" {
				return f.skip()
			}
			switch f.peek() {
			case '"':
				v, ok := f.str()
				text = string(v)
				return ok
			case '[':
				var ok bool
				text, ok = f.parts(p, hashImage)
				return ok
			case 'n':
				return f.literal("null")
			}
			return false
		})
		p.texts = append(p.texts, text)
		return ok
	})
}

func (f *fastParser) parts(p *parsedRequest, hashImage bool) (string, bool) {
	if !f.open('[') {
		return "", false
	}
	text := ""
	ok := f.array(func() bool {
		if !f.open('{') {
			return false
		}
		var typ, ptext []byte
		hasImage := false
		ok := f.object(func(name []byte) bool {
			switch {
			case (string(name) == "type" || string(name) == "text") && f.peek() == '"':
				v, ok := f.str()
				if string(name) == "type" {
					typ = v
				} else {
					ptext = v
				}
				return ok
			case string(name) == "image_url":
				hasImage = true
				if p.images == 0 && p.firstImage == "" && hashImage && f.peek() == '{' {
					return f.firstImage(p)
				}
			}
			return f.skip()
		})
		switch {
		case string(typ) == "text":
			text += string(ptext)
		case string(typ) == "image_url" || hasImage:
			p.images++
		}
		return ok
	})
	return text, ok
}

// firstImage reads {"url": "data:<type>;base64,<payload>", ...} and keeps
// the hash of the payload, as readFirstImage does.
func (f *fastParser) firstImage(p *parsedRequest) bool {
	if !f.open('{') {
		return false
	}
	return f.object(func(name []byte) bool {
		if string(name) != "url" || f.peek() != '"' {
			return f.skip()
		}
		url, ok := f.str()
		if !ok {
			return false
		}
		if i := bytes.Index(url, []byte("base64,")); i >= 0 {
			url = url[i+len("base64,"):]
		}
		p.firstImage = provider.PayloadKeyBytes(url)
		return true
	})
}

// ws steps over JSON whitespace.
func (f *fastParser) ws() {
	for f.i < len(f.b) {
		switch f.b[f.i] {
		case ' ', '\t', '\n', '\r':
			f.i++
		default:
			return
		}
	}
}

// peek is the next byte after whitespace (0 at the end).
func (f *fastParser) peek() byte {
	f.ws()
	if f.i < len(f.b) {
		return f.b[f.i]
	}
	return 0
}

// open consumes c ('{' or '[') after whitespace, one level deeper.
func (f *fastParser) open(c byte) bool {
	if f.peek() != c {
		return false
	}
	f.depth++
	if f.depth > fastMaxDepth {
		return false
	}
	f.i++
	return true
}

// object reads the members of an object whose '{' open consumed, calling
// member with each decoded name positioned at its value; the names must be distinct, as the
// stream decoder requires.
func (f *fastParser) object(member func(name []byte) bool) bool {
	if f.peek() == '}' {
		f.i++
		f.depth--
		return true
	}
	var names [][]byte
	var many map[string]bool
	for {
		if f.peek() != '"' {
			return false
		}
		name, ok := f.str()
		if !ok {
			return false
		}
		switch {
		case many != nil:
			if many[string(name)] {
				return false
			}
			many[string(name)] = true
		case slices.ContainsFunc(names, func(n []byte) bool { return bytes.Equal(n, name) }):
			return false
		case len(names) < fastManyNames:
			names = append(names, name)
		default:
			many = make(map[string]bool, 2*fastManyNames)
			for _, n := range names {
				many[string(n)] = true
			}
			many[string(name)] = true
		}
		if f.peek() != ':' {
			return false
		}
		f.i++
		f.ws()
		if !member(name) {
			return false
		}
		switch f.peek() {
		case ',':
			f.i++
		case '}':
			f.i++
			f.depth--
			return true
		default:
			return false
		}
	}
}

// array reads the elements of an array whose '[' open consumed, calling
// elem positioned at each.
func (f *fastParser) array(elem func() bool) bool {
	if f.peek() == ']' {
		f.i++
		f.depth--
		return true
	}
	for {
		f.ws()
		if !elem() {
			return false
		}
		switch f.peek() {
		case ',':
			f.i++
		case ']':
			f.i++
			f.depth--
			return true
		default:
			return false
		}
	}
}

// skip steps over one value, checking it.
func (f *fastParser) skip() bool {
	switch c := f.peek(); {
	case c == '"':
		_, ok := f.str()
		return ok
	case c == '{':
		return f.open('{') && f.object(func([]byte) bool { return f.skip() })
	case c == '[':
		return f.open('[') && f.array(f.skip)
	case c == 't':
		return f.literal("true")
	case c == 'f':
		return f.literal("false")
	case c == 'n':
		return f.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return f.number()
	}
	return false
}

func (f *fastParser) literal(lit string) bool {
	if !bytes.HasPrefix(f.b[f.i:], []byte(lit)) {
		return false
	}
	f.i += len(lit)
	return true
}

// number steps over a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (f *fastParser) number() bool {
	b, i := f.b, f.i
	digits := func() int {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	f.i = i
	return true
}

// str reads the string at f.i and returns its decoded contents: the body's
// own bytes when the string has no escapes and is printable ASCII, else a
// copy decoded (and checked) by jsontext.AppendUnquote.
func (f *fastParser) str() ([]byte, bool) {
	b, start := f.b, f.i
	if start >= len(b) || b[start] != '"' {
		return nil, false
	}
	// The closing quote is the first quote not escaped. Each quote and
	// each backslash is found once, so hostile bodies full of escapes or
	// quotes still take linear time.
	pos, quote, escaped := start+1, -1, false
	for {
		if quote < pos {
			q := bytes.IndexByte(b[pos:], '"')
			if q < 0 {
				return nil, false
			}
			quote = pos + q
		}
		bs := bytes.IndexByte(b[pos:quote], '\\')
		if bs < 0 {
			pos = quote
			break
		}
		escaped = true
		pos += bs + 2 // the backslash and the byte it escapes
		if pos > len(b) {
			return nil, false
		}
	}
	f.i = pos + 1
	raw := b[start+1 : pos]
	if !escaped && printableASCII(raw) {
		return raw, true
	}
	v, err := jsontext.AppendUnquote(nil, b[start:pos+1])
	return v, err == nil
}

// printableASCII reports whether every byte of s is in [0x20, 0x80),
// thirty-two bytes at a time.
func printableASCII(s []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// For a word x, x&highs marks a byte >= 0x80; when there is none,
	// (x - 0x20…) &^ x & highs is non-zero exactly when some byte is
	// below 0x20.
	bad := func(x uint64) uint64 { return x | (x-0x20*ones)&^x }
	for len(s) >= 32 {
		t := bad(binary.LittleEndian.Uint64(s)) | bad(binary.LittleEndian.Uint64(s[8:])) |
			bad(binary.LittleEndian.Uint64(s[16:])) | bad(binary.LittleEndian.Uint64(s[24:]))
		if t&highs != 0 {
			return false
		}
		s = s[32:]
	}
	for len(s) >= 8 {
		if bad(binary.LittleEndian.Uint64(s))&highs != 0 {
			return false
		}
		s = s[8:]
	}
	for _, c := range s {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}
