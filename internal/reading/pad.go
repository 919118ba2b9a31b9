package reading

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// padChunk is the type of the chunk that pads a served PNG: ancillary
// (lower-case first letter: decoders skip it), private (lower-case
// second), reserved bit clear (upper-case third), safe to copy (lower-case
// fourth). It holds zero bytes and nothing else.
const padChunk = "chPd"

// pngEnd is the IEND chunk every PNG ends with (length 0, type, CRC).
var pngEnd = []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82}

// chunkOverhead is a chunk's length, type and CRC fields.
const chunkOverhead = 12

// padPNG returns data grown to exactly size bytes by a padChunk inserted
// before IEND; the pixels and every other chunk are unchanged. size must
// leave room for the chunk's own fields (len(data)+12 at least).
func padPNG(data []byte, size int) ([]byte, error) {
	if len(data) < 8+len(pngEnd) || !bytes.HasSuffix(data, pngEnd) {
		return nil, errors.New("not a PNG ending in its IEND chunk")
	}
	n := size - len(data) - chunkOverhead
	if n < 0 {
		return nil, errors.New("padding target smaller than the image")
	}
	out := make([]byte, 0, size)
	out = append(out, data[:len(data)-len(pngEnd)]...)
	out = binary.BigEndian.AppendUint32(out, uint32(n))
	start := len(out)
	out = append(out, padChunk...)
	out = append(out, make([]byte, n)...)
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
	return append(out, pngEnd...), nil
}
