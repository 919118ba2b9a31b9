// Package pycsv writes CSV the way Python's csv module does by default,
// which is what the reference implementation's CSV files look like:
// comma-separated, "\r\n" after every row, a field quoted only when it
// holds a comma, a double quote, "\r" or "\n", quotes doubled inside.
// Go's encoding/csv differs (it quotes fields starting with a space and
// rewrites "\n" inside fields to "\r\n"), hence this small writer.
package pycsv

import (
	"bytes"
	"strings"
)

// Rows returns rows as CSV bytes.
func Rows(rows ...[]string) []byte {
	var b bytes.Buffer
	for _, row := range rows {
		for i, f := range row {
			if i > 0 {
				b.WriteByte(',')
			}
			if strings.ContainsAny(f, ",\"\r\n") {
				b.WriteByte('"')
				b.WriteString(strings.ReplaceAll(f, `"`, `""`))
				b.WriteByte('"')
			} else {
				b.WriteString(f)
			}
		}
		b.WriteString("\r\n")
	}
	return b.Bytes()
}
