// Package imagefile is the one way chexpercept decodes an image: PNG and
// JPEG only, recognised by their signature, read through package safefile
// (regular files only, never blocking, bounded). Every header is checked
// against one limit before any pixel buffer is allocated (see CheckSize):
// at most MaxSide per side, MaxPixels in all, and at most MaxDecodedBytes
// for what the decoder will allocate. A 1 KB PNG claiming 100000×100000 is
// therefore refused in microseconds instead of asking for tens of
// gigabytes. VerifyPNG checks a PNG as completely as a decode without
// building the image.
package imagefile

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/chexpercept/chexpercept/internal/safefile"
)

// The one image size limit, checked on the header before decoding.
// Native chest radiographs are around 3000×3000 (9 Mpx, 18 MB as 16-bit
// grey); benchmark images are 1024×1024.
const (
	// MaxSide is the largest width or height accepted.
	MaxSide = 16384
	// MaxPixels is the largest width × height accepted (64 Mpx).
	MaxPixels = 1 << 26
	// MaxDecodedBytes bounds what one decode allocates, estimated from the
	// header's colour model (see bytesPerPixel): 16384×16384 RGBA, 1 GiB,
	// or 8192×8192 RGBA64, 512 MiB, are refused.
	MaxDecodedBytes = 256 << 20
	// MaxFileBytes caps the size of an image file read into memory.
	MaxFileBytes = 64 << 20
)

// maxHeaderBytes bounds how far a header is searched for (JPEG metadata
// segments may precede the frame header; a palette PNG's DecodeConfig
// reads up to the PLTE chunk).
const maxHeaderBytes = 4 << 20

// Formats, as image.DecodeConfig names them.
const (
	PNG  = "png"
	JPEG = "jpeg"
)

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// sniff names the format from the first bytes, "" when neither.
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, pngSignature):
		return PNG
	case len(b) >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff:
		return JPEG
	}
	return ""
}

// header reads an image header from r, one of the allowed formats, and
// checks its size; it never decodes pixels.
func header(r io.Reader, allowed ...string) (format string, w, h int, err error) {
	br := bufio.NewReader(r)
	sig, _ := br.Peek(len(pngSignature))
	format = sniff(sig)
	ok := false
	for _, a := range allowed {
		ok = ok || a == format
	}
	if !ok {
		want := strings.ToUpper(strings.Join(allowed, "\x00"))
		return "", 0, 0, fmt.Errorf("not a decodable %s: unknown signature", strings.ReplaceAll(want, "\x00", " or "))
	}
	var cfg image.Config
	if format == PNG {
		cfg, err = png.DecodeConfig(br)
	} else {
		cfg, err = jpeg.DecodeConfig(br)
	}
	if err != nil {
		return "", 0, 0, fmt.Errorf("not a decodable %s: %w", strings.ToUpper(format), err)
	}
	if err := CheckSize(format, cfg.Width, cfg.Height, cfg.ColorModel); err != nil {
		return "", 0, 0, err
	}
	return format, cfg.Width, cfg.Height, nil
}

type sizeError struct{ msg string }

func (e sizeError) Error() string   { return e.msg }
func (e sizeError) Is(t error) bool { return t == safefile.ErrTooLarge }

// CheckSize applies the one size limit to a header's width, height and
// colour model (nil: counted at the largest size per pixel). The error
// wraps ErrTooLarge.
func CheckSize(format string, w, h int, model color.Model) error {
	f := strings.ToUpper(format)
	if w < 1 || h < 1 || w > MaxSide || h > MaxSide {
		return sizeError{fmt.Sprintf("%s size %d×%d outside 1…%d per side", f, w, h, MaxSide)}
	}
	px := int64(w) * int64(h)
	if px > MaxPixels {
		return sizeError{fmt.Sprintf("%s size %d×%d exceeds %d pixels", f, w, h, MaxPixels)}
	}
	if need := px * bytesPerPixel(format, model); need > MaxDecodedBytes {
		return sizeError{fmt.Sprintf("%s size %d×%d needs %d MiB to decode, more than %d MiB",
			f, w, h, need>>20, MaxDecodedBytes>>20)}
	}
	return nil
}

// bytesPerPixel estimates what the standard decoders allocate per pixel.
// JPEG counts the decoded planes plus the 4-byte coefficient per component
// that a progressive JPEG keeps (the frame type is not in the config).
func bytesPerPixel(format string, m color.Model) int64 {
	if format == JPEG {
		switch m {
		case color.GrayModel:
			return 1 + 4
		case color.CMYKModel:
			return 4 + 16
		}
		return 3 + 12
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	switch m {
	case color.GrayModel:
		return 1
	case color.Gray16Model:
		return 2
	case color.RGBAModel, color.NRGBAModel:
		return 4
	}
	return 8
}

// CheckHeader reads the header of the PNG or JPEG file at path (following
// a symbolic link, as for every user-named input) and checks it against
// the size limit, without decoding pixels. Errors name path.
func CheckHeader(path string) (format string, width, height int, err error) {
	f, err := safefile.Open(path, safefile.Follow)
	if err != nil {
		return "", 0, 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	if err := checkFileSize(f); err != nil {
		return "", 0, 0, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	format, width, height, err = header(io.LimitReader(f, maxHeaderBytes), PNG, JPEG)
	if err != nil {
		return "", 0, 0, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return format, width, height, nil
}

// checkFileSize refuses an open image file larger than MaxFileBytes: no
// reader of its pixels would take it, so its header passes for nothing.
func checkFileSize(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return CheckFileSize(fi.Size())
}

// CheckFileSize refuses an image file of size bytes when it is larger than
// MaxFileBytes (the error matches safefile.ErrTooLarge): the one rule of
// the image files read whole, hashed or checked by their header.
func CheckFileSize(size int64) error {
	if size > MaxFileBytes {
		return safefile.TooLarge(size, MaxFileBytes)
	}
	return nil
}

// Header is CheckHeader for an image in memory, restricted to the allowed
// formats (PNG and JPEG when none is given).
func Header(data []byte, allowed ...string) (format string, width, height int, err error) {
	if len(allowed) == 0 {
		allowed = []string{PNG, JPEG}
	}
	return header(bytes.NewReader(data), allowed...)
}

// Decode decodes a PNG or JPEG after checking its header.
func Decode(data []byte) (image.Image, string, error) {
	format, _, _, err := Header(data)
	if err != nil {
		return nil, "", err
	}
	var img image.Image
	if format == PNG {
		img, err = png.Decode(bytes.NewReader(data))
	} else {
		img, err = jpeg.Decode(bytes.NewReader(data))
	}
	if err != nil {
		return nil, "", fmt.Errorf("not a decodable %s: %w", strings.ToUpper(format), err)
	}
	return img, format, nil
}

// DecodePNG decodes a PNG after checking its header; other formats are
// refused.
func DecodePNG(data []byte) (image.Image, error) {
	if _, _, _, err := Header(data, PNG); err != nil {
		return nil, err
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a decodable PNG: %w", err)
	}
	return img, nil
}
