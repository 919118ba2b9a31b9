// Package imagefiletest makes hostile image files for tests (imported by
// tests only).
package imagefiletest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
)

// BombPNG is a PNG of about 1 KB whose header claims w×h 8-bit RGBA
// pixels: a signature, a valid IHDR, one IDAT of compressed zero rows and
// IEND. A decoder that trusts the header allocates w·h·4 bytes.
func BombPNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk(&b, "IHDR", ihdr)
	var z bytes.Buffer
	// Compressing into memory at a valid level cannot fail.
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	_, _ = zw.Write(make([]byte, 1<<20)) // filter byte 0 and zero samples
	_ = zw.Close()
	chunk(&b, "IDAT", z.Bytes())
	chunk(&b, "IEND", nil)
	return b.Bytes()
}

func chunk(b *bytes.Buffer, typ string, data []byte) {
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(data))))
	c := append([]byte(typ), data...)
	b.Write(c)
	b.Write(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(c)))
}
