package imagefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// VerifyPNG reports whether data is a PNG that DecodePNG would decode,
// without building the image. After the same header and size check it
// walks the chunks (each one's length and CRC-32, the order of IHDR, PLTE,
// tRNS, IDAT and IEND, and what each of those may hold) and inflates the
// image data, checking the zlib framing and Adler-32, the byte count of
// every row and pass, and every row's filter type.
//
// It accepts exactly the files png.Decode accepts, image/png's tolerances
// included: palette indices past the palette, a tRNS longer than the
// palette, unknown chunks anywhere before IEND, IDAT chunks after the
// image data, anything after IEND. The differential tests compare the two
// verdicts on thousands of valid and damaged files, so a toolchain upgrade
// that moves image/png is caught. It costs a fifth to a half of a decode:
// turning rows into pixels, which it skips, is most of a decode.
func VerifyPNG(data []byte) error {
	if _, _, _, err := Header(data, PNG); err != nil {
		return err
	}
	if err := verifyPNG(data); err != nil {
		return fmt.Errorf("not a decodable PNG: %w", err)
	}
	return nil
}

// PNG colour types (PNG specification, IHDR).
const (
	colourGrey      = 0
	colourTrue      = 2
	colourIndexed   = 3
	colourGreyAlpha = 4
	colourTrueAlpha = 6
)

// bitsPerPixel maps the allowed (bit depth, colour type) pairs of the PNG
// specification to the bits one pixel takes in a row.
var bitsPerPixel = map[[2]byte]int{
	{1, colourGrey}: 1, {2, colourGrey}: 2, {4, colourGrey}: 4, {8, colourGrey}: 8, {16, colourGrey}: 16,
	{8, colourTrue}: 24, {16, colourTrue}: 48,
	{1, colourIndexed}: 1, {2, colourIndexed}: 2, {4, colourIndexed}: 4, {8, colourIndexed}: 8,
	{8, colourGreyAlpha}: 16, {16, colourGreyAlpha}: 32,
	{8, colourTrueAlpha}: 32, {16, colourTrueAlpha}: 64,
}

// adam7 lists the seven passes of Adam7 interlacing as
// {column step, row step, first column, first row}.
var adam7 = [7][4]int{
	{8, 8, 0, 0}, {8, 8, 4, 0}, {4, 8, 0, 4}, {4, 4, 2, 0}, {2, 4, 0, 2}, {2, 2, 1, 0}, {1, 2, 0, 1},
}

// maxChunkLength is the largest chunk length the PNG specification allows
// (2³¹-1).
const maxChunkLength = 1<<31 - 1

// pngPart is one chunk located in the file, its CRC already checked.
type pngPart struct {
	name string
	body []byte
	at   int // offset of its length field
	end  int // offset just past its CRC
}

// partAt locates and checks the chunk whose length field is at off.
func partAt(data []byte, off int) (pngPart, error) {
	if len(data)-off < 8 {
		return pngPart{}, fmt.Errorf("file ends at byte %d, inside a chunk header (no IEND chunk)", len(data))
	}
	n := binary.BigEndian.Uint32(data[off:])
	name := string(data[off+4 : off+8])
	if n > maxChunkLength {
		return pngPart{}, fmt.Errorf("chunk %q at byte %d: length %d exceeds 2³¹-1", name, off, n)
	}
	end := off + 12 + int(n)
	if end > len(data) {
		return pngPart{}, fmt.Errorf("chunk %q at byte %d: %d bytes long, but the file ends at byte %d", name, off, n, len(data))
	}
	body := data[off+8 : end-4]
	if crc32.ChecksumIEEE(data[off+4:end-4]) != binary.BigEndian.Uint32(data[end-4:]) {
		return pngPart{}, fmt.Errorf("chunk %q at byte %d: CRC-32 mismatch", name, off)
	}
	return pngPart{name: name, body: body, at: off, end: end}, nil
}

// pngLayout is what IHDR says about the image data.
type pngLayout struct {
	width, height int
	depth, colour byte
	interlaced    bool
}

// pngWalk follows the critical chunks through a file. The seen flags
// decide which chunk may come next: image/png's ordering rules are the
// specification's, except that unknown chunks (critical ones too) are
// skipped wherever they stand and IDAT chunks after the image data are
// ignored.
type pngWalk struct {
	data                   []byte
	layout                 pngLayout
	ihdr, plte, trns, idat bool
}

func verifyPNG(data []byte) error {
	if len(data) < len(pngSignature) || string(data[:len(pngSignature)]) != string(pngSignature) {
		return errors.New("no PNG signature")
	}
	w := pngWalk{data: data}
	off := len(pngSignature)
	for {
		c, err := partAt(data, off)
		if err != nil {
			return err
		}
		off = c.end
		switch c.name {
		case "IHDR":
			err = w.header(c)
		case "PLTE":
			err = w.palette(c)
		case "tRNS":
			err = w.transparency(c)
		case "IDAT":
			if !w.idat {
				off, err = w.imageData(c)
			}
		case "IEND":
			return w.end(c)
		}
		if err != nil {
			return err
		}
	}
}

func misplaced(c pngPart, where string) error {
	return fmt.Errorf("chunk %s at byte %d: %s", c.name, c.at, where)
}

func (w *pngWalk) header(c pngPart) error {
	if w.ihdr {
		return misplaced(c, "a second IHDR")
	}
	w.ihdr = true
	b := c.body
	if len(b) != 13 {
		return fmt.Errorf("IHDR is %d bytes long, not 13", len(b))
	}
	width, height := int32(binary.BigEndian.Uint32(b)), int32(binary.BigEndian.Uint32(b[4:]))
	depth, colour := b[8], b[9]
	switch {
	case b[10] != 0:
		return fmt.Errorf("IHDR: unknown compression method %d", b[10])
	case b[11] != 0:
		return fmt.Errorf("IHDR: unknown filter method %d", b[11])
	case b[12] > 1:
		return fmt.Errorf("IHDR: unknown interlace method %d", b[12])
	case width <= 0 || height <= 0:
		return fmt.Errorf("IHDR: size %d×%d", width, height)
	case int64(width)*int64(height) > (1<<63-1)/8:
		return fmt.Errorf("IHDR: size %d×%d too large", width, height)
	}
	if bitsPerPixel[[2]byte{depth, colour}] == 0 {
		return fmt.Errorf("IHDR: bit depth %d with colour type %d", depth, colour)
	}
	w.layout = pngLayout{width: int(width), height: int(height), depth: depth, colour: colour, interlaced: b[12] == 1}
	return nil
}

func (w *pngWalk) palette(c pngPart) error {
	if !w.ihdr || w.plte || w.trns || w.idat {
		return misplaced(c, "PLTE must follow IHDR once, before tRNS and IDAT")
	}
	w.plte = true
	entries := len(c.body) / 3
	if len(c.body)%3 != 0 || entries == 0 || entries > 256 || entries > 1<<w.layout.depth {
		return fmt.Errorf("PLTE of %d bytes for bit depth %d", len(c.body), w.layout.depth)
	}
	// A palette is required for indexed colour and optional (a
	// suggestion, ignored here) for truecolour; grey images have none.
	switch w.layout.colour {
	case colourIndexed, colourTrue, colourTrueAlpha:
		return nil
	}
	return fmt.Errorf("PLTE in an image of colour type %d", w.layout.colour)
}

func (w *pngWalk) transparency(c pngPart) error {
	colour := w.layout.colour
	if !w.ihdr || w.trns || w.idat || (colour == colourIndexed && !w.plte) ||
		(w.plte && colour != colourIndexed && colour != colourTrue) {
		return misplaced(c, "tRNS must follow IHDR (and PLTE, for indexed colour) once, before IDAT")
	}
	w.trns = true
	n := len(c.body)
	switch {
	case colour == colourGrey && n == 2, colour == colourTrue && n == 6, colour == colourIndexed && n <= 256:
		return nil
	case colour == colourGrey || colour == colourTrue || colour == colourIndexed:
		return fmt.Errorf("tRNS of %d bytes for colour type %d", n, colour)
	}
	return fmt.Errorf("tRNS in an image of colour type %d (it has an alpha channel)", colour)
}

func (w *pngWalk) end(c pngPart) error {
	if !w.idat {
		return misplaced(c, "IEND before any IDAT")
	}
	if len(c.body) != 0 {
		return fmt.Errorf("IEND of %d bytes, not empty", len(c.body))
	}
	return nil
}

// imageData checks the image data, which starts in the IDAT chunk first
// and continues through the IDAT chunks right after it, and returns the
// offset of the chunk after the last one the data used.
func (w *pngWalk) imageData(first pngPart) (int, error) {
	if !w.ihdr || (w.layout.colour == colourIndexed && !w.plte) {
		return 0, misplaced(first, "IDAT needs IHDR first, and PLTE for indexed colour")
	}
	w.idat = true
	rows := newRowCheck(w.layout)
	feed := idatFeed{data: w.data, rest: first.body, next: first.end}
	if err := inflateZlib(&feed, rows.want, rows.check); err != nil {
		return 0, fmt.Errorf("image data: %w", err)
	}
	if len(feed.rest) > 0 {
		return 0, fmt.Errorf("image data: %d bytes after the zlib stream in the IDAT chunk ending at byte %d", len(feed.rest), feed.next)
	}
	return feed.next, nil
}

// idatTake is how many bytes image/png takes from the IDAT chunks at a
// time (it reads them through a 4096-byte buffer). This decides which
// bytes after the zlib stream it tolerates: those its last take picked up
// along with the stream's end. Any others in that chunk are an error.
const idatTake = 4096

// idatFeed hands the inflater the bodies of consecutive IDAT chunks as
// one byte stream, taking them in the same pieces as image/png, so that
// both agree on where the data may end. Taken bytes stay in held until
// the inflater uses them.
type idatFeed struct {
	data []byte
	rest []byte // the current chunk's bytes not yet taken
	next int    // offset of the chunk after the current one
	held []byte
}

// take moves on to the next IDAT chunk when the current one is used up
// (the image data may not be interrupted by another chunk) and takes at
// most max of its bytes.
func (f *idatFeed) take(max int) ([]byte, error) {
	for len(f.rest) == 0 {
		c, err := partAt(f.data, f.next)
		if err != nil {
			return nil, err
		}
		if c.name != "IDAT" {
			return nil, fmt.Errorf("the image is not complete when chunk %s at byte %d interrupts the IDAT chunks", c.name, c.at)
		}
		f.rest, f.next = c.body, c.end
	}
	n := min(max, len(f.rest))
	b := f.rest[:n]
	f.rest = f.rest[n:]
	return b, nil
}

func (f *idatFeed) ReadByte() (byte, error) {
	if len(f.held) == 0 {
		b, err := f.take(idatTake)
		if err != nil {
			return 0, err
		}
		f.held = b
	}
	c := f.held[0]
	f.held = f.held[1:]
	return c, nil
}

// Read gives what is held, or else takes a fresh piece; a read of at
// least a whole take's size, with nothing held, is served from the chunk
// directly, as image/png's buffer does.
func (f *idatFeed) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(f.held) == 0 {
		b, err := f.take(max(len(p), idatTake))
		if err != nil {
			return 0, err
		}
		if len(p) >= idatTake {
			return copy(p, b), nil
		}
		f.held = b
	}
	n := copy(p, f.held)
	f.held = f.held[n:]
	return n, nil
}

// rowCheck follows the inflated image data row by row: each row is one
// filter-type byte (0 None, 1 Sub, 2 Up, 3 Average, 4 Paeth) and its
// packed samples. An interlaced image is its non-empty Adam7 passes, one
// after the other; an empty pass has no rows, not even filter bytes.
type rowCheck struct {
	passes []passRows
	want   int64 // the inflated size
	pass   int
	left   int   // rows left in the pass
	skip   int64 // bytes before the next filter byte
}

type passRows struct {
	rowBytes int64 // filter byte included
	rows     int
}

func newRowCheck(l pngLayout) *rowCheck {
	bits := int64(bitsPerPixel[[2]byte{l.depth, l.colour}])
	r := &rowCheck{}
	add := func(w, h int) {
		if w > 0 && h > 0 {
			p := passRows{rowBytes: 1 + (bits*int64(w)+7)/8, rows: h}
			r.passes = append(r.passes, p)
			r.want += p.rowBytes * int64(h)
		}
	}
	if !l.interlaced {
		add(l.width, l.height)
	} else {
		for _, p := range adam7 {
			add((l.width-p[2]+p[0]-1)/p[0], (l.height-p[3]+p[1]-1)/p[1])
		}
	}
	if len(r.passes) > 0 {
		r.left = r.passes[0].rows
	}
	return r
}

// check looks at the filter bytes in the next piece of inflated data;
// inflateZlib never passes more than want bytes in all.
func (r *rowCheck) check(p []byte) error {
	for int64(len(p)) > r.skip {
		p = p[r.skip:]
		if p[0] > 4 {
			return fmt.Errorf("filter type %d (pass %d, %d rows before the end)", p[0], r.pass+1, r.left)
		}
		r.skip = r.passes[r.pass].rowBytes
		if r.left--; r.left == 0 && r.pass+1 < len(r.passes) {
			r.pass++
			r.left = r.passes[r.pass].rows
		}
	}
	r.skip -= int64(len(p))
	return nil
}
