// Package pngenc writes PNG files two ways: opaque RGB and greyscale
// images quickly (Encoder), and images of any kind uncompressed, at a length that
// depends on their size and format only (EncodeStored: the reading app
// serves its images so, that no byte count tells a question's candidate
// images apart).
//
// The standard library's image/png encoder tries all five PNG filters on
// every row and keeps the row whose bytes sum smallest, then deflates at
// level 6 ("default") or with its fastest method. For the bundle's images
// (1024² radiographs with coloured overlays) that choice costs most of a
// build: about 170 ms of CPU per image, against a deflate that needs a
// quarter of it. This package makes the opposite trade: every row is
// filtered with Up (the difference from the row above: radiographs change
// slowly from one row to the next), and the rows are deflated at a fixed
// level. At level 4 a bundle image takes about 48 ms and its file is
// about 7 % larger than image/png's default level (measured in
// docs/performance.md); the pixels are the same.
//
// Encoder.Fastest swaps compress/flate for the deflater of
// github.com/klauspost/compress at its fastest level: about a third of
// level 4's CPU time for files about 13 % larger (on the demo's bundle
// images; image/png's fastest level takes almost four times as long for files
// about as large), for bundles built with bundle_png_compression: fast.
//
// The output is a plain PNG (8-bit RGB, no interlacing, IDAT chunks of at
// most 64 KiB) that any decoder reads. It is deterministic: the same
// image and level give the same bytes with a given compress/flate (or,
// for Fastest, a given klauspost/compress, which go.mod pins).
package pngenc

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"io"
	"sync"

	kzlib "github.com/klauspost/compress/zlib"
)

// DefaultLevel is the deflate level of Encoder's zero value.
const DefaultLevel = 4

// ErrNotOpaque is returned for an image with a pixel whose alpha is not
// 255: this package writes RGB only, and dropping alpha would change the
// picture. Callers fall back to image/png.
var ErrNotOpaque = errors.New("pngenc: image is not opaque")

// Encoder writes PNGs at one deflate level. It is safe for concurrent
// use; compressors and row buffers are reused between calls.
type Encoder struct {
	// Level is the compress/flate level, 1 (fastest) to 9 (smallest);
	// 0 means DefaultLevel.
	Level int
	// Fastest deflates with klauspost/compress at its fastest level
	// instead of compress/flate; Level is then not used.
	Fastest bool

	pool sync.Pool // *state
}

type state struct {
	zw       zlibWriter
	level    int // fastestLevel for klauspost/compress
	idat     *chunkWriter
	prev     []byte
	cur      []byte
	filtered []byte
}

// zlibWriter is what both zlib writers offer.
type zlibWriter interface {
	io.WriteCloser
	Reset(w io.Writer)
}

// fastestLevel marks the pooled state of a Fastest encoder.
const fastestLevel = -1

var signature = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}

// EncodeRGBA writes img as an 8-bit RGB PNG to w. It returns ErrNotOpaque,
// having written nothing, if a pixel is not fully opaque.
func (e *Encoder) EncodeRGBA(w io.Writer, img *image.RGBA) error {
	level, err := e.level()
	if err != nil {
		return err
	}
	b := img.Bounds()
	width, height := b.Dx(), b.Dy()
	if err := checkSize(width, height, 3); err != nil {
		return err
	}
	if !opaque(img) {
		return ErrNotOpaque
	}
	return e.encode(w, level, width, height, 3, colourRGB, func(y int, cur []byte) {
		row := img.Pix[img.PixOffset(b.Min.X, b.Min.Y+y):]
		for x, i := 0, 0; i < len(cur); x, i = x+4, i+3 {
			cur[i], cur[i+1], cur[i+2] = row[x], row[x+1], row[x+2]
		}
	})
}

// EncodeGray writes img as an 8-bit greyscale PNG to w, filtered and
// deflated as EncodeRGBA does.
func (e *Encoder) EncodeGray(w io.Writer, img *image.Gray) error {
	level, err := e.level()
	if err != nil {
		return err
	}
	b := img.Bounds()
	width, height := b.Dx(), b.Dy()
	if err := checkSize(width, height, 1); err != nil {
		return err
	}
	return e.encode(w, level, width, height, 1, colourGray, func(y int, cur []byte) {
		copy(cur, img.Pix[img.PixOffset(b.Min.X, b.Min.Y+y):])
	})
}

// PNG colour types written.
const (
	colourGray = 0
	colourRGB  = 2
)

// level is the deflate level to use, fastestLevel for Fastest.
func (e *Encoder) level() (int, error) {
	if e.Fastest {
		return fastestLevel, nil
	}
	level := e.Level
	if level == 0 {
		level = DefaultLevel
	}
	if level < 1 || level > 9 {
		return 0, fmt.Errorf("pngenc: deflate level %d is outside 1..9", level)
	}
	return level, nil
}

func checkSize(width, height, bpp int) error {
	if width <= 0 || height <= 0 {
		return fmt.Errorf("pngenc: empty image (%dx%d)", width, height)
	}
	if int64(width) > 1<<31-1 || int64(height) > 1<<31-1 || int64(width)*int64(bpp)+1 > 1<<31-1 {
		return fmt.Errorf("pngenc: image too large (%dx%d)", width, height)
	}
	return nil
}

// encode writes a width×height 8-bit PNG of the colour type whose pixels
// take bpp bytes; fill puts row y's samples into cur.
func (e *Encoder) encode(w io.Writer, level, width, height, bpp int, colour byte, fill func(y int, cur []byte)) error {
	n := width * bpp
	s := e.get(level, n)
	defer e.pool.Put(s)

	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(signature)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(height))
	ihdr[8] = 8 // bit depth
	ihdr[9] = colour
	// compression 0, filter method 0, no interlace
	writeChunk(bw, "IHDR", ihdr[:])

	s.idat.reset(bw)
	s.zw.Reset(s.idat)
	clear(s.prev)     // the row above the first is zero
	s.filtered[0] = 2 // Up
	for y := range height {
		cur := s.cur[:n]
		fill(y, cur)
		out := s.filtered[1 : n+1]
		for i, v := range cur {
			out[i] = v - s.prev[i]
		}
		if _, err := s.zw.Write(s.filtered[:n+1]); err != nil {
			return err
		}
		s.prev, s.cur = s.cur, s.prev
	}
	if err := s.zw.Close(); err != nil {
		return err
	}
	if err := s.idat.flush(); err != nil {
		return err
	}
	writeChunk(bw, "IEND", nil)
	return bw.Flush()
}

// get takes pooled state for rows of n bytes.
func (e *Encoder) get(level, n int) *state {
	s, _ := e.pool.Get().(*state)
	if s == nil || s.level != level {
		var zw zlibWriter
		if level == fastestLevel {
			zw, _ = kzlib.NewWriterLevel(nil, kzlib.BestSpeed) // a valid level: no error
		} else {
			zw, _ = zlib.NewWriterLevel(nil, level) // level checked by the caller
		}
		s = &state{zw: zw, level: level, idat: &chunkWriter{}}
	}
	if cap(s.prev) < n {
		s.prev, s.cur, s.filtered = make([]byte, n), make([]byte, n), make([]byte, n+1)
	}
	s.prev, s.cur, s.filtered = s.prev[:n], s.cur[:n], s.filtered[:n+1]
	return s
}

func opaque(img *image.RGBA) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		row := img.Pix[img.PixOffset(b.Min.X, y) : img.PixOffset(b.Min.X, y)+4*b.Dx()]
		for i := 3; i < len(row); i += 4 {
			if row[i] != 0xff {
				return false
			}
		}
	}
	return true
}

// writeChunk writes one PNG chunk: length, type, data, CRC-32 of type and
// data. Errors stay in the bufio.Writer and surface at its Flush.
func writeChunk(w *bufio.Writer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	w.Write(n[:])
	w.WriteString(typ)
	w.Write(data)
	crc := crc32.Update(crc32.ChecksumIEEE([]byte(typ)), crc32.IEEETable, data)
	binary.BigEndian.PutUint32(n[:], crc)
	w.Write(n[:])
}

// chunkWriter cuts the zlib stream into IDAT chunks of at most
// idatSize bytes.
type chunkWriter struct {
	w   *bufio.Writer
	buf [idatSize]byte
	n   int
}

const idatSize = 64 << 10

func (c *chunkWriter) reset(w *bufio.Writer) { c.w, c.n = w, 0 }

func (c *chunkWriter) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		k := copy(c.buf[c.n:], p)
		c.n += k
		p = p[k:]
		if c.n == idatSize {
			if err := c.flush(); err != nil {
				return 0, err
			}
		}
	}
	return written, nil
}

func (c *chunkWriter) flush() error {
	if c.n == 0 {
		return nil
	}
	writeChunk(c.w, "IDAT", c.buf[:c.n])
	c.n = 0
	_, err := c.w.Write(nil) // the bufio.Writer's sticky error, if any
	return err
}
