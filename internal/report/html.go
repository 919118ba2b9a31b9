package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"image"
	"image/png"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	_ "embed"
	xdraw "golang.org/x/image/draw"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/imagefile"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

var (
	//go:embed assets/index.html.tmpl
	indexTmpl string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/report.js
	reportJS string
)

var pageTmpl = template.Must(template.New("index").Funcs(template.FuncMap{
	"inc":      func(i int) int { return i + 1 },
	"note":     tableNote,
	"oracleID": oracleModeID,
	"lower":    strings.ToLower,
	// long marks a cell of free text (sampling settings, a server's
	// identity) that may wrap, so that its table fits the window.
	"long": func(s string) bool { return len(s) > 40 },
	// md renders the one markdown feature the tables use, *emphasis*.
	"md": func(s string) template.HTML {
		esc := template.HTMLEscapeString(s)
		if len(s) > 2 && strings.HasPrefix(s, "*") && strings.HasSuffix(s, "*") {
			return template.HTML("<em>" + template.HTMLEscapeString(s[1:len(s)-1]) + "</em>")
		}
		return template.HTML(strings.ReplaceAll(esc, "*", ""))
	},
}).Parse(indexTmpl))

// plotLink is a plot in index.html; W and H (CSS pixels) reserve its box
// so that lazily loaded plots never shift the page under the pointer.
// Caption is the sentence shown under it.
type plotLink struct {
	Name, PNG, SVG, Caption string
	W, H                    int
}

func newPlotLink(j plotJob, runs []*analysis.RunResult) plotLink {
	return plotLink{Name: j.name, PNG: j.name + ".png", SVG: j.name + ".svg", Caption: plotCaption(j.name, runs),
		W: int(j.w.Points() * 96 / 72), H: int(j.h.Points() * 96 / 72)}
}

// ThumbSize is the longest side of an embedded thumbnail, in pixels.
const ThumbSize = 384

func writeHTML(ctx context.Context, res *analysis.Result, d *doc, jobs []plotJob, dir string, opts Options) error {
	var runs []*analysis.RunResult
	for _, rr := range res.Runs {
		if rr.Scored {
			runs = append(runs, rr)
		}
	}
	items := collectItems(res, runs)

	prefix := ""
	if b := res.Set.Bench; b != nil {
		if opts.EmbedImages {
			if err := embedImages(ctx, opts.Job, b.Dir, dir, items, opts.Workers); err != nil {
				return err
			}
			prefix = "img/"
		} else {
			absB, err1 := filepath.Abs(b.Dir)
			absR, err2 := filepath.Abs(dir)
			if err1 == nil && err2 == nil {
				if rel, err := filepath.Rel(absR, absB); err == nil {
					prefix = relURL(rel)
				} else {
					prefix = (&url.URL{Scheme: "file", Path: filepath.ToSlash(absB) + "/"}).String()
				}
			}
		}
	}
	ix := buildIndex(items, runs, res.Lesions[1:], res.Modes(), prefix)
	ix.Flags = indexFlags(res, items)
	idx, err := json.Marshal(ix)
	if err != nil {
		return err
	}
	var fns []func() error
	for _, j := range jobs {
		fns = append(fns, func() error { return j.run(opts.Job, dir) })
	}
	details, err := detailJobs(opts.Job, dir, items)
	if err != nil {
		return err
	}
	if err := runAll(ctx, append(fns, details...), opts.Workers); err != nil {
		return err
	}
	// Each plot appears once: one shown in the findings is left out of
	// the plots section.
	shown := map[string]bool{}
	if d.Findings != nil {
		for _, p := range d.Findings.Plots {
			shown[p.Name] = true
		}
	}
	var plots []plotLink
	for _, j := range jobs {
		if !shown[j.name] {
			plots = append(plots, newPlotLink(j, res.Runs))
		}
	}
	var buf bytes.Buffer
	err = pageTmpl.Execute(&buf, map[string]any{
		"CSS":      template.CSS(reportCSS),
		"JS":       template.JS(reportJS),
		"Index":    template.JS(idx),
		"Doc":      d,
		"Plots":    plots,
		"Health":   healthHTML(res),
		"Glossary": glossary,
	})
	if err != nil {
		return fmt.Errorf("index.html: %w", err)
	}
	return outdir.WriteFile(opts.Job, dir, "index.html", buf.Bytes())
}

// relURL turns a relative file path into a relative URL prefix ending in "/".
func relURL(rel string) string {
	if rel == "." {
		return ""
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/") + "/"
}

// embedImages writes a thumbnail of every image the items show under
// dir/img/, at the same relative path as in the benchmark. Once ctx ends
// no further thumbnail is made, and the error is ctx's.
func embedImages(ctx context.Context, j *job.Job, benchDir, dir string, items []*item, workers int) error {
	var paths []string
	seen := map[string]bool{}
	for _, it := range items {
		for _, r := range it.recs {
			if r == nil {
				continue
			}
			for _, t := range r.Turns {
				for _, im := range t.Images {
					if p := safeImage(it.key, im); p != "" && !seen[p] {
						seen[p] = true
						paths = append(paths, p)
					}
				}
			}
		}
	}
	errs := make([]error, len(paths))
	parallel(len(paths), workers, func(i int) {
		if errs[i] = ctx.Err(); errs[i] == nil {
			errs[i] = thumbnail(j, filepath.Join(benchDir, filepath.FromSlash(paths[i])), dir, path.Join("img", paths[i]))
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func thumbnail(j *job.Job, src, dir, rel string) error {
	// A benchmark file: no symbolic links, bounded size, and the header
	// checked against imagefile's limit before any pixel is decoded.
	data, err := safefile.ReadFile(src, imagefile.MaxFileBytes, safefile.NoFollow)
	if err != nil {
		return fmt.Errorf("embed images: %w", err)
	}
	img, err := imagefile.DecodePNG(data)
	if err != nil {
		return fmt.Errorf("embed images: %s: %w", src, err)
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if s := max(w, h); s > ThumbSize {
		w, h = max(1, w*ThumbSize/s), max(1, h*ThumbSize/s)
	}
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	xdraw.ApproxBiLinear.Scale(out, out.Bounds(), img, b, xdraw.Src, nil)
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return err
	}
	return outdir.WriteFile(j, dir, rel, buf.Bytes())
}
