// Package textsafe makes outside text safe to show: on one terminal line
// (OneLine, Printable), cut to a bound without splitting a UTF-8
// character (Clip, QuoteClipped), with its white space collapsed
// (Squash), and quoted for a POSIX shell (ShellQuote). Every message,
// table cell and command line built from file content, a server's reply
// or a user's input goes through it.
package textsafe

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// OneLine escapes control characters (line breaks included) and Unicode
// format characters (bidirectional overrides and isolates such as U+202E,
// marks such as U+200E and U+061C, zero-width characters) as Go escapes
// (\x1b, \u202e), so that a message built from file content stays on one
// line and shows on a terminal the text it holds, in its stored order.
func OneLine(s string) string { return escape(s, isControl) }

// Printable is OneLine for multi-line terminal output: line feeds and tabs
// are kept, everything else OneLine escapes is escaped.
func Printable(s string) string {
	return escape(s, func(r rune) bool { return r != '\n' && r != '\t' && isControl(r) })
}

func escape(s string, bad func(rune) bool) string {
	if !strings.ContainsFunc(s, bad) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if bad(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isControl: C0 and C1 controls, DEL, the Unicode line and paragraph
// separators, and every format character (category Cf: U+200E/U+200F,
// U+202A–U+202E, U+2066–U+2069, U+061C, U+200B–U+200D, U+FEFF, …).
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r)
}

// Ellipsis marks the place where Clip cut a text.
const Ellipsis = "…"

// Clip returns s when it is at most limit bytes long; otherwise its
// longest prefix of at most limit bytes that ends on a character
// boundary, followed by Ellipsis (so the result may exceed limit by the
// ellipsis' 3 bytes). It never splits a UTF-8 character.
func Clip(s string, limit int) string { return ClipWith(s, limit, Ellipsis) }

// ClipWith is Clip with another mark than the ellipsis (an ASCII "~" where
// the font has no "…").
func ClipWith(s string, limit int, mark string) string {
	if len(s) <= limit {
		return s
	}
	return s[:cut(s, limit)] + mark
}

// ClipRunes returns s when it has at most n characters; otherwise its
// first n characters followed by Ellipsis.
func ClipRunes(s string, n int) string {
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + Ellipsis
}

// cut is the largest index at most limit (and at most len(s)) at which a
// character of s starts.
func cut(s string, limit int) int {
	n := max(0, min(limit, len(s)))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// QuoteClipped quotes s as a Go string for an error message; a text
// longer than limit bytes is cut on a character boundary and followed by
// its length: "abc"… (1234 bytes).
func QuoteClipped(s string, limit int) string {
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s%s (%d bytes)", strconv.Quote(s[:cut(s, limit)]), Ellipsis, len(s))
}

// Squash collapses every run of white space (line breaks included) to one
// space and trims both ends, so that a detail fits a CSV cell or a line.
func Squash(s string) string { return strings.Join(strings.Fields(s), " ") }

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9@%+=:,./_-]+$`)

// ShellQuote quotes s for a POSIX shell when it holds anything but plain
// path characters; the empty string becomes two single quotes.
func ShellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
