package reading

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"

	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/pngenc"
)

// The images a reader's browser receives. A benchmark stores its images
// compressed, and a compressed file's length and structure follow its
// pixels: the answer's candidate mask of a revision-result question tends
// to be the smallest file. The reading app therefore serves every image
// re-encoded as a stored PNG (pngenc.EncodeStored): uncompressed, one
// IDAT, no other chunk, so that its length and layout depend on its width,
// height and format alone. All images of one question are decoded and
// encoded together, in the narrowest format that holds all of them, and
// kept (webapp.BlobCache, by the files' SHA-256) until evicted: every
// image of a question then has the same length and layout. Nor does the
// time to each depend on its file: every request of a question reads and
// checks all of its files, and the first pays for encoding all of them,
// whichever image it asks for.

const (
	// imageCacheBytes bounds the encoded questions kept: a question of
	// four 1024² colour candidates takes 12.6 MB, a radiograph 1 MB.
	imageCacheBytes = 256 << 20
	// imageBuilds bounds the questions decoded and encoded at once.
	imageBuilds = 2
)

// encodeTurn is the images of one question as served: the files (names
// are their benchmark-relative paths, for errors) decoded, and each
// written in the narrowest format that holds every one of them. Images of
// one size come out at one length.
func encodeTurn(names []string, files [][]byte) ([][]byte, error) {
	imgs := make([]image.Image, len(files))
	format := pngenc.Gray
	for i, data := range files {
		img, _, err := imagefile.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", names[i], err)
		}
		imgs[i] = img
		format = max(format, pngenc.FormatOf(img))
	}
	out := make([][]byte, len(imgs))
	for i, img := range imgs {
		enc, err := pngenc.EncodeStored(img, format)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", names[i], err)
		}
		out[i] = enc
	}
	return out, nil
}

// packImages puts a question's images in one blob for the cache: their
// count and lengths, then their bytes.
func packImages(imgs [][]byte) []byte {
	n := 4 + 4*len(imgs)
	for _, b := range imgs {
		n += len(b)
	}
	out := make([]byte, 0, n)
	out = binary.BigEndian.AppendUint32(out, uint32(len(imgs)))
	for _, b := range imgs {
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
	}
	for _, b := range imgs {
		out = append(out, b...)
	}
	return out
}

// unpackImage is the i-th image of a blob packImages wrote.
func unpackImage(blob []byte, i int) ([]byte, error) {
	if len(blob) < 4 {
		return nil, errors.New("image cache: short entry")
	}
	n := int(binary.BigEndian.Uint32(blob))
	if i < 0 || i >= n || len(blob) < 4+4*n {
		return nil, errors.New("image cache: no such image in the entry")
	}
	p := 4 + 4*n
	for k := 0; k < i; k++ {
		p += int(binary.BigEndian.Uint32(blob[4+4*k:]))
	}
	end := p + int(binary.BigEndian.Uint32(blob[4+4*i:]))
	if end > len(blob) {
		return nil, errors.New("image cache: short entry")
	}
	return blob[p:end:end], nil
}
