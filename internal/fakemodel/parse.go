package fakemodel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/chexpercept/chexpercept/internal/provider"

	"github.com/go-json-experiment/json/jsontext"
)

// parsedRequest is what the server needs from a chat completion request.
type parsedRequest struct {
	model  string
	texts  []string // per message: its string content, or its text parts joined
	images int
	// firstImage is provider.PayloadKey of the first image's base64 text,
	// the only image the random policy looks at.
	firstImage string
}

// parseChat reads a request body that was read whole into data; readErr
// is the error that ended the read (nil when the body ended). A complete
// body that the fast path accepts is read by it; a body over the size
// limit (http.MaxBytesError) is refused unread; anything else (another
// read error, bad JSON, a shape the fast path does not take) is read by
// parseChatStream over the same bytes followed by the same read error, so
// the decision and the error message are the stream parser's. With
// hashImage false the first image is not hashed (firstImage stays "":
// the first policy never looks at it).
func parseChat(data []byte, readErr error, hashImage bool) (*parsedRequest, error) {
	if readErr == nil {
		if p, ok := parseFast(data, hashImage); ok {
			return p, nil
		}
	}
	var tooLarge *http.MaxBytesError
	if errors.As(readErr, &tooLarge) {
		// Too large, whatever it holds: not parsed, so that the body is
		// not held twice (the bytes and the parser's copy of a string).
		return nil, readErr
	}
	p, err := parseChatStream(io.MultiReader(bytes.NewReader(data), errReader{readErr}))
	if p != nil && !hashImage {
		p.firstImage = ""
	}
	return p, err
}

// errReader returns err, or io.EOF when err is nil.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) {
	if r.err == nil {
		return 0, io.EOF
	}
	return 0, r.err
}

// parseChatStream reads a request body as a token stream: image URLs
// (megabytes of base64 each) are skipped once, never copied into strings
// or scanned a second time, and unknown members are skipped. Contents
// follow the Chat Completions shapes: a string, null, or a list of parts.
//
// It is the reference reading of a request: parseChat takes the fast
// path (fast.go) when it can, and this one for everything the fast path
// does not accept, so every error is this function's.
func parseChatStream(r io.Reader) (*parsedRequest, error) {
	d := jsontext.NewDecoder(r)
	p := &parsedRequest{}
	if err := expect(d, '{'); err != nil {
		return nil, err
	}
	sawMessages := false
	for d.PeekKind() != '}' {
		name, err := readString(d)
		if err != nil {
			return nil, err
		}
		switch name {
		case "model":
			if d.PeekKind() == '"' {
				if p.model, err = readString(d); err != nil {
					return nil, err
				}
				continue
			}
			err = d.SkipValue()
		case "messages":
			sawMessages = true
			err = parseMessages(d, p)
		default:
			err = d.SkipValue()
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := d.ReadToken(); err != nil { // '}'
		return nil, err
	}
	if !sawMessages {
		return nil, errors.New("messages is missing")
	}
	return p, nil
}

func parseMessages(d *jsontext.Decoder, p *parsedRequest) error {
	if err := expect(d, '['); err != nil {
		return fmt.Errorf("messages: %w", err)
	}
	for i := 0; d.PeekKind() != ']'; i++ {
		if err := expect(d, '{'); err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
		text := ""
		for d.PeekKind() != '}' {
			name, err := readString(d)
			if err != nil {
				return err
			}
			if name != "content" {
				if err := d.SkipValue(); err != nil {
					return err
				}
				continue
			}
			switch d.PeekKind() {
			case '"':
				if text, err = readString(d); err != nil {
					return err
				}
			case '[':
				if text, err = parseParts(d, p); err != nil {
					return fmt.Errorf("messages[%d].content: %w", i, err)
				}
			case 'n':
				if err := d.SkipValue(); err != nil {
					return err
				}
			default:
				return fmt.Errorf("messages[%d].content must be a string or a list of parts", i)
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return err
		}
		p.texts = append(p.texts, text)
	}
	_, err := d.ReadToken() // ']'
	return err
}

func parseParts(d *jsontext.Decoder, p *parsedRequest) (string, error) {
	if err := expect(d, '['); err != nil {
		return "", err
	}
	text := ""
	for d.PeekKind() != ']' {
		if err := expect(d, '{'); err != nil {
			return "", err
		}
		typ, ptext, hasImage := "", "", false
		for d.PeekKind() != '}' {
			name, err := readString(d)
			if err != nil {
				return "", err
			}
			switch {
			case (name == "type" || name == "text") && d.PeekKind() == '"':
				v, err := readString(d)
				if err != nil {
					return "", err
				}
				if name == "type" {
					typ = v
				} else {
					ptext = v
				}
			case name == "image_url":
				hasImage = true
				if p.images == 0 && p.firstImage == "" {
					err = readFirstImage(d, p)
				} else {
					err = d.SkipValue()
				}
			default:
				err = d.SkipValue()
			}
			if err != nil {
				return "", err
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return "", err
		}
		switch {
		case typ == "text":
			text += ptext
		case typ == "image_url" || hasImage:
			p.images++
		}
	}
	_, err := d.ReadToken()
	return text, err
}

func expect(d *jsontext.Decoder, k jsontext.Kind) error {
	t, err := d.ReadToken()
	if err != nil {
		return err
	}
	if t.Kind() != k {
		return fmt.Errorf("expected %v, found %v", k, t.Kind())
	}
	return nil
}

func readString(d *jsontext.Decoder) (string, error) {
	t, err := d.ReadToken()
	if err != nil {
		return "", err
	}
	if t.Kind() != '"' {
		return "", fmt.Errorf("expected a string, found %v", t.Kind())
	}
	return t.String(), nil
}

// readFirstImage reads {"url": "data:<type>;base64,<payload>", ...} and
// keeps the hash of the payload; other members are skipped.
func readFirstImage(d *jsontext.Decoder, p *parsedRequest) error {
	if d.PeekKind() != '{' {
		return d.SkipValue()
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() != '}' {
		name, err := readString(d)
		if err != nil {
			return err
		}
		if name != "url" || d.PeekKind() != '"' {
			if err := d.SkipValue(); err != nil {
				return err
			}
			continue
		}
		// The URL is megabytes of base64: hash it in place rather than
		// copy it into a string (a URL without escapes, as every client
		// sends, is its raw bytes between the quotes).
		v, err := d.ReadValue()
		if err != nil {
			return err
		}
		url := []byte(v[1 : len(v)-1])
		if bytes.IndexByte(url, '\\') >= 0 {
			if url, err = jsontext.AppendUnquote(nil, v); err != nil {
				return err
			}
		}
		if i := bytes.Index(url, []byte("base64,")); i >= 0 {
			url = url[i+len("base64,"):]
		}
		p.firstImage = provider.PayloadKeyBytes(url)
	}
	_, err := d.ReadToken()
	return err
}
