package webapp

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// StaticMaxAge is how long a browser may reuse a static file before it
// asks again (then with If-None-Match, answered 304 when unchanged).
const StaticMaxAge = "public, max-age=300"

// maxStaticBytes bounds one static file held in memory.
const maxStaticBytes = 4 << 20

// StaticHandler serves the files of fsys (embedded, so fixed for the
// process) with an ETag of their content and Cache-Control, answering
// 304 to a matching If-None-Match. Each file is read and hashed once.
func StaticHandler(fsys fs.FS) http.Handler {
	var mu sync.Mutex
	cache := map[string]*staticFile{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		mu.Lock()
		f, ok := cache[name]
		mu.Unlock()
		if !ok {
			var err error
			if f, err = loadStatic(fsys, name); err != nil {
				http.NotFound(w, r)
				return
			}
			mu.Lock()
			cache[name] = f
			mu.Unlock()
		}
		ServeBytes(w, r, name, f.etag, StaticMaxAge, f.data)
	})
}

type staticFile struct {
	data []byte
	etag string
}

func loadStatic(fsys fs.FS, name string) (*staticFile, error) {
	if name == "" || name == "." {
		return nil, fs.ErrNotExist
	}
	fi, err := fs.Stat(fsys, name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxStaticBytes {
		return nil, fs.ErrNotExist
	}
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	return &staticFile{data: data, etag: ETag(data)}, nil
}

// ETag is a strong entity tag of content.
func ETag(data []byte) string {
	h := sha256.Sum256(data)
	return `"` + base64.RawURLEncoding.EncodeToString(h[:16]) + `"`
}

// ServeBytes answers data (its type from name) with etag and
// cacheControl, or 304 when the request's If-None-Match names etag;
// ranges and HEAD work as for a file.
func ServeBytes(w http.ResponseWriter, r *http.Request, name, etag, cacheControl string, data []byte) {
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", cacheControl)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

// favicon is the apps' icon: a 32×32 PNG (a light ring on slate) in an
// ICO container, made once.
var favicon = sync.OnceValue(func() []byte {
	const n = 32
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	bg, fg := color.NRGBA{0x33, 0x41, 0x55, 0xff}, color.NRGBA{0xe2, 0xe8, 0xf0, 0xff}
	for y := range n {
		for x := range n {
			dx, dy := 2*x+1-n, 2*y+1-n
			d := dx*dx + dy*dy
			if d >= 4*9*9 && d <= 4*12*12 { // a ring of radius 9 to 12 pixels
				img.Set(x, y, fg)
			} else {
				img.Set(x, y, bg)
			}
		}
	}
	var p bytes.Buffer
	// Encoding a valid image and fixed-size values into memory cannot fail.
	_ = png.Encode(&p, img)
	var ico bytes.Buffer
	le := func(v any) { _ = binary.Write(&ico, binary.LittleEndian, v) }
	le([3]uint16{0, 1, 1})             // reserved, type icon, one image
	ico.Write([]byte{n, n, 0, 0})      // width, height, no palette, reserved
	le([2]uint16{1, 32})               // colour planes, bits per pixel
	le([2]uint32{uint32(p.Len()), 22}) // size, offset after this 22-byte header
	ico.Write(p.Bytes())
	return ico.Bytes()
})

var faviconTag = sync.OnceValue(func() string { return ETag(favicon()) })

// serveFavicon answers /favicon.ico without a session: browsers ask for
// it on every page, signed in or not.
func serveFavicon(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/x-icon")
	ServeBytes(w, r, "favicon.ico", faviconTag(), "public, max-age=86400", favicon())
}
