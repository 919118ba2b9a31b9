package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/chexpercept/chexpercept/internal/job"
)

// TestDocumentedFlagsInHelp: every flag the guides show on a chexpercept
// command line (in a shell block or an inline code span) is one that
// command's --help lists: not unknown, not a hidden older spelling.
func TestDocumentedFlagsInHelp(t *testing.T) {
	t.Parallel()
	root := newRootCmd(job.Options{})
	files, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	more, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "reference", "*.md"))
	files = append(append(files, more...), filepath.Join(repoRoot, "README.md"))
	checked := 0
	for _, file := range files {
		rel, _ := filepath.Rel(repoRoot, file)
		for _, l := range commandLines(t, file) {
			cmd, words := findSub(root, l.text)
			if cmd == nil {
				continue
			}
			for _, w := range words {
				name, ok := flagName(w)
				if !ok {
					continue
				}
				checked++
				fl := cmd.Flags().Lookup(name)
				if fl == nil {
					fl = cmd.InheritedFlags().Lookup(name)
				}
				switch {
				case fl == nil:
					t.Errorf("%s:%d: %s has no flag --%s: %s", rel, l.line, cmd.CommandPath(), name, l.text)
				case fl.Hidden:
					t.Errorf("%s:%d: --%s of %s is a hidden older spelling, not in --help: %s", rel, l.line, name, cmd.CommandPath(), l.text)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d documented flags found: the scan is broken", checked)
	}
}

type docLine struct {
	line int
	text string
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	flagWord = regexp.MustCompile(`^--([a-z][a-z0-9-]*)(=.*)?$`)
)

// commandLines returns the chexpercept command lines of a Markdown file:
// lines of fenced blocks (with their \ continuations joined) and inline
// code spans, each from its "chexpercept" word on; a span may also start
// with a subcommand's name ("review export --jsonl").
func commandLines(t *testing.T, file string) []docLine {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n, fenced, pending, start := 0, false, "", 0
	para, paraStart := "", 0 // a paragraph's text: a code span may wrap
	spans := func() {
		for _, m := range codeSpan.FindAllStringSubmatch(para, -1) {
			out = append(out, docLine{paraStart, strings.TrimPrefix(m[1], "chexpercept ")})
		}
		para = ""
	}
	for sc.Scan() {
		n++
		s := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(s), "```") {
			spans()
			fenced, pending = !fenced, ""
			continue
		}
		if fenced {
			if pending == "" {
				start = n
			}
			pending += " " + strings.TrimSpace(s)
			if strings.HasSuffix(pending, `\`) {
				pending = strings.TrimSuffix(pending, `\`)
				continue
			}
			if i := strings.Index(pending, "chexpercept "); i >= 0 {
				out = append(out, docLine{start, pending[i+len("chexpercept "):]})
			}
			pending = ""
			continue
		}
		if strings.TrimSpace(s) == "" {
			spans()
			continue
		}
		if para == "" {
			paraStart = n
		}
		para += " " + s
	}
	spans()
	return out
}

// findSub resolves the leading words of text to a subcommand (nil when
// text does not start with one) and returns the words after the
// command's name, up to the end of the command (a pipe, ;, &&, # or >).
func findSub(root *cobra.Command, text string) (*cobra.Command, []string) {
	words := strings.Fields(text)
	cmd := root
	i := 0
	for ; i < len(words); i++ {
		var next *cobra.Command
		for _, c := range cmd.Commands() {
			if c.Name() == words[i] {
				next = c
			}
		}
		if next == nil {
			break
		}
		cmd = next
	}
	if cmd == root {
		return nil, nil
	}
	var rest []string
	for _, w := range words[i:] {
		if w == "|" || w == ";" || w == "&&" || w == "||" || strings.HasPrefix(w, "#") || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") {
			break
		}
		rest = append(rest, w)
	}
	return cmd, rest
}

// flagName is the long flag a word names, if any.
func flagName(w string) (string, bool) {
	w = strings.Trim(w, `"',.;:()`)
	m := flagWord.FindStringSubmatch(w)
	if m == nil || m[1] == "help" {
		return "", false
	}
	return m[1], true
}
