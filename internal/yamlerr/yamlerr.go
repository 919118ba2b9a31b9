// Package yamlerr turns go.yaml.in/yaml/v3 decoding errors into one-line
// messages for people editing a YAML file: the line, the key path and
// what was wanted, never Go type names. yaml.v3 reports type errors as
// strings ("field x not found in type pkg.T", "cannot unmarshal !!str `x`
// into int"), so each is matched and its key is found by re-parsing the
// document into nodes and looking for the node on the reported line.
package yamlerr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/chexpercept/chexpercept/internal/textsafe"
)

var (
	unknownField = regexp.MustCompile("^line ([0-9]+): field (.*) not found in type .*$")
	cannotDecode = regexp.MustCompile("^line ([0-9]+): cannot unmarshal (!!?[^ `]*)(?: `(.*)`)? into (.*)$")
)

// MaxFileBytes bounds every YAML file a command reads (a --models file,
// a price table, a build configuration, a prompt profile, a domains file).
// Each is a few kilobytes, while a YAML parser holds a node of a hundred
// bytes or more for every value, which can be every second byte.
const MaxFileBytes = 256 << 10

// Decode decodes data, which must hold one YAML document, into v; with
// known, a key v does not have is an error. An empty file gives io.EOF
// itself; any other error is one line (Explain), and a second document
// (after a "---" line) is an error rather than silently ignored.
//
// Before decoding, the document's nodes are counted with every alias
// expanded where it is used: more than MaxNodes is an error, so a few
// kilobytes of anchors and aliases never decode into millions of values.
// A list entry that is empty (null, "~" or nothing after "- ") is an
// error too: the decoder would drop it silently from a list of mappings.
func Decode(data []byte, v any, known bool) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err == nil {
		if err := checkNodes(&root); err != nil {
			return err
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(known)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return errors.New(Explain(data, err))
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return errors.New(Explain(data, err))
	}
	line := next.Line
	if line == 0 && len(next.Content) > 0 {
		line = next.Content[0].Line
	}
	return fmt.Errorf("line %d: a second YAML document starts here (\"---\"); the file must hold one", line)
}

// MaxNodes bounds the values of a YAML document with its aliases
// expanded: twice what MaxFileBytes can hold written out (a value every
// second byte), so no file without aliases comes near it.
const MaxNodes = MaxFileBytes

// checkNodes refuses a document whose alias expansion exceeds MaxNodes,
// or which has an empty list entry.
func checkNodes(root *yaml.Node) error {
	memo := map[*yaml.Node]int{}
	var count func(n *yaml.Node, depth int) int
	count = func(n *yaml.Node, depth int) int {
		if c, ok := memo[n]; ok {
			return c
		}
		if depth > 1000 {
			return MaxNodes + 1
		}
		memo[n] = MaxNodes + 1 // a node inside itself counts as too many
		c := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			c = count(n.Alias, depth+1)
		}
		for _, k := range n.Content {
			c += count(k, depth+1)
			if c > MaxNodes {
				break
			}
		}
		memo[n] = min(c, MaxNodes+1)
		return memo[n]
	}
	if n := count(root, 0); n > MaxNodes {
		return fmt.Errorf("the document expands to more than %d values (through aliases); refusing it", MaxNodes)
	}
	var err error
	walk(root, "", func(key, v *yaml.Node, p string) bool {
		if key == nil && strings.HasSuffix(p, "]") && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			err = fmt.Errorf("line %d: key %q: an empty list entry (null)", v.Line, p)
			return true
		}
		return false
	})
	return err
}

// Explain describes err, returned by decoding data, on one line, e.g.
// `line 1: unknown key "seeds"` or `line 1: key "lf": want an integer,
// got "many"`. Several type errors are joined with "; ".
func Explain(data []byte, err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return textsafe.Squash(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // a TypeError means the syntax was fine
	// Each explanation walks the document, so only the first few are
	// explained: a file of many wrong entries stays a short line, found
	// in linear time.
	n := min(len(te.Errors), maxExplained)
	msgs := make([]string, 0, n+1)
	for _, e := range te.Errors[:n] {
		msgs = append(msgs, explainOne(&root, e))
	}
	if more := len(te.Errors) - n; more > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(msgs, "; ")
}

// maxExplained bounds the errors Explain describes.
const maxExplained = 5

func explainOne(root *yaml.Node, e string) string {
	if m := unknownField.FindStringSubmatch(e); m != nil {
		line, _ := strconv.Atoi(m[1])
		path := m[2]
		walk(root, "", func(key, _ *yaml.Node, p string) bool {
			if key != nil && key.Line == line && key.Value == m[2] {
				path = p
				return true
			}
			return false
		})
		return fmt.Sprintf("line %d: unknown key %q", line, path)
	}
	if m := cannotDecode.FindStringSubmatch(e); m != nil {
		line, _ := strconv.Atoi(m[1])
		tag, val, into := m[2], m[3], m[4]
		got := describeGot(tag, val)
		path := ""
		walk(root, "", func(_, v *yaml.Node, p string) bool {
			if v.Line != line || v.ShortTag() != tag || !sameValue(v.Value, val, tag) {
				return false
			}
			path = p
			if v.Kind == yaml.ScalarNode {
				got = describeGot(tag, v.Value)
			}
			return true
		})
		if path == "" {
			return fmt.Sprintf("line %d: want %s, got %s", line, describeWant(into), got)
		}
		return fmt.Sprintf("line %d: key %q: want %s, got %s", line, path, describeWant(into), got)
	}
	return textsafe.Squash(e)
}

// walk visits every node below n with the key node that holds it (nil for
// sequence items and the document root) and its dotted path ("oracle.x",
// "point_widths[1]"), stopping when visit returns true.
func walk(n *yaml.Node, path string, visit func(key, val *yaml.Node, path string) bool) bool {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if visit(nil, c, path) || walk(c, path, visit) {
				return true
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if visit(k, v, p) || walk(v, p, visit) {
				return true
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if visit(nil, c, p) || walk(c, p, visit) {
				return true
			}
		}
	}
	return false
}

// sameValue matches a node's value with the one quoted in a yaml.v3
// message, which cuts values longer than 10 bytes to 7 bytes and "...".
func sameValue(node, msg, tag string) bool {
	if tag == "!!seq" || tag == "!!map" {
		return true
	}
	if len(node) > 10 {
		return msg == node[:7]+"..."
	}
	return node == msg
}

// describeGot says what the file holds, in YAML terms.
func describeGot(tag, val string) string {
	switch tag {
	case "!!seq":
		return "a list"
	case "!!map":
		return "a mapping"
	case "!!null":
		return "nothing (null)"
	case "!!str":
		if r := []rune(val); len(r) > 40 {
			val = string(r[:37]) + "..."
		}
		return strconv.Quote(val)
	}
	return val
}

// describeWant names a Go type as the kind of YAML value it takes.
func describeWant(goType string) string {
	t := strings.TrimLeft(goType, "*")
	switch t {
	case "int", "int8", "int16", "int32", "int64":
		return "an integer"
	case "uint", "uint8", "uint16", "uint32", "uint64":
		return "a non-negative integer"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	}
	switch {
	case strings.HasPrefix(t, "["):
		return "a list"
	case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "struct"), strings.Contains(t, "."):
		return "a mapping"
	}
	return "a different kind of value"
}
