package report

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"path/filepath"
	"regexp"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/chexpercept/chexpercept/internal/analysis"
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/outdir"
)

// Okabe–Ito colours: distinguishable with the common colour-vision
// deficiencies.
var seriesColors = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{86, 180, 233, 255}, color.RGBA{213, 94, 0, 255},
	color.RGBA{240, 228, 66, 255}, color.RGBA{0, 0, 0, 255},
}

// barSeries is one coloured series of a grouped bar chart: one value per
// group (NaN: no bar), with its interval.
type barSeries struct {
	name        string
	val, lo, hi []float64
}

type xyErr struct {
	plotter.XYs
	plotter.YErrors
}

// minBar is the height (a share, 1.2 %) at which a 0 % bar is drawn.
const minBar = 0.012

// groupedBars draws bars in data coordinates (so the interval bars sit
// exactly on them): group i spans [i−0.4, i+0.4], split among the series.
func groupedBars(title, ylabel string, groups []string, series []barSeries) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.Y.Label.Text = ylabel
	// Head room above 100 % keeps the legend (top right) off the bars.
	p.Y.Min, p.Y.Max = 0, 1.08+0.075*float64(len(series))
	p.Y.Tick.Marker = percentTicks{}
	p.Add(plotter.NewGrid())
	bw := 0.8 / float64(max(1, len(series)))
	for s, ser := range series {
		var rings []plotter.XYer
		var eb xyErr
		for i, v := range ser.val {
			if math.IsNaN(v) {
				continue
			}
			x := float64(i) - 0.4 + bw*(float64(s)+0.5)
			// A bar at (or near) 0 % is drawn minBar high, so that it
			// shows as a thin bar rather than as no bar at all.
			top := max(v, minBar)
			rings = append(rings, plotter.XYs{{X: x - bw/2, Y: 0}, {X: x + bw/2, Y: 0}, {X: x + bw/2, Y: top}, {X: x - bw/2, Y: top}})
			if !math.IsNaN(ser.lo[i]) {
				eb.XYs = append(eb.XYs, plotter.XY{X: x, Y: v})
				eb.YErrors = append(eb.YErrors, struct{ Low, High float64 }{v - ser.lo[i], ser.hi[i] - v})
			}
		}
		col := seriesColors[s%len(seriesColors)]
		// An empty polygon still gives the legend its swatch.
		if len(rings) == 0 {
			rings = append(rings, plotter.XYs{{X: 0, Y: 0}, {X: 0, Y: 0}, {X: 0, Y: 0}})
		}
		poly, err := plotter.NewPolygon(rings...)
		if err != nil {
			return nil, err
		}
		poly.Color = col
		poly.LineStyle.Width = 0
		p.Add(poly)
		p.Legend.Add(ser.name, poly)
		if len(eb.XYs) > 0 {
			bars, err := plotter.NewYErrorBars(eb)
			if err != nil {
				return nil, err
			}
			bars.LineStyle.Width = vg.Points(0.8)
			bars.CapWidth = vg.Points(min(4, 60*bw))
			p.Add(bars)
		}
	}
	p.NominalX(groups...)
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	rotateX(p, groups)
	p.Legend.Top = true
	p.Legend.Left = false
	// Inset from the right edge of the data area, so that the swatches
	// and the text stay inside the image.
	p.Legend.XOffs = -vg.Points(6)
	p.Legend.YOffs = -vg.Points(2)
	return p, nil
}

// rotateX tilts long category labels so that 14 or more never overlap.
func rotateX(p *plot.Plot, labels []string) {
	long := 0
	for _, l := range labels {
		long = max(long, len(l))
	}
	if len(labels) > 6 || long*len(labels) > 60 {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
}

type percentTicks struct{}

func (percentTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for v := 0.0; v <= 1.0001; v += 0.1 {
		label := ""
		if int(math.Round(v*10))%2 == 0 {
			label = fmt.Sprintf("%.0f%%", v*100)
		}
		t = append(t, plot.Tick{Value: v, Label: label})
	}
	return t
}

// grid is a heat map's values, rows top to bottom.
type grid struct {
	rows, cols int
	z          [][]float64
}

func (g grid) Dims() (c, r int)   { return g.cols, g.rows }
func (g grid) Z(c, r int) float64 { return g.z[g.rows-1-r][c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

// blues is a light sequential palette, so black cell text stays legible.
type blues struct{}

func (blues) Colors() []color.Color {
	const n = 64
	out := make([]color.Color, n)
	for i := range out {
		t := float64(i) / (n - 1)
		lerp := func(a, b float64) uint8 { return uint8(math.Round(a + t*(b-a))) }
		out[i] = color.RGBA{lerp(247, 66), lerp(251, 146), lerp(255, 198), 255}
	}
	return out
}

// heatmap draws values (0..1 for the colour; NaN grey) with a text label
// in every cell.
func heatmap(title, xlabel, ylabel string, cols, rows []string, z [][]float64, text [][]string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	g := grid{rows: len(rows), cols: len(cols), z: z}
	h := plotter.NewHeatMap(g, blues{})
	h.Min, h.Max = 0, 1
	h.NaN = color.RGBA{225, 225, 225, 255}
	h.Underflow, h.Overflow = h.NaN, color.RGBA{66, 146, 198, 255}
	p.Add(h)
	var lab plotter.XYLabels
	for r := range rows {
		for c := range cols {
			lab.XYs = append(lab.XYs, plotter.XY{X: float64(c), Y: float64(len(rows) - 1 - r)})
			lab.Labels = append(lab.Labels, text[r][c])
		}
	}
	labels, err := plotter.NewLabels(lab)
	if err != nil {
		return nil, err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].XAlign = draw.XCenter
		labels.TextStyle[i].YAlign = draw.YCenter
	}
	p.Add(labels)
	var xt, yt []plot.Tick
	for c, l := range cols {
		xt = append(xt, plot.Tick{Value: float64(c), Label: l})
	}
	for r, l := range rows {
		yt = append(yt, plot.Tick{Value: float64(len(rows) - 1 - r), Label: l})
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	p.X.Min, p.X.Max = -0.5, float64(len(cols))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(rows))-0.5
	rotateX(p, cols)
	return p, nil
}

// savePlot writes p as name.png and name.svg.
func savePlot(j *job.Job, dir, name string, p *plot.Plot, w, h vg.Length) error {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(img))
	if err := writeTo(j, dir, name+".png", fastPNG{img}); err != nil {
		return err
	}
	svg := vgsvg.New(w, h)
	p.Draw(draw.New(svg))
	return writeTo(j, dir, name+".svg", svg)
}

// fastPNG encodes a canvas with the fastest deflate level: plots are
// flat-coloured, so the files stay small and encoding stays cheap.
type fastPNG struct{ c *vgimg.Canvas }

func (f fastPNG) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	err := enc.Encode(cw, f.c.Image())
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeTo writes dir/rel from wt (outdir.Create: no write through a link).
func writeTo(j *job.Job, dir, rel string, wt io.WriterTo) error {
	f, err := outdir.Create(j, dir, rel)
	if err != nil {
		return err
	}
	name := filepath.Join(dir, rel)
	bw := bufio.NewWriterSize(f, 64<<10)
	if _, err := wt.WriteTo(bw); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", name, err)
	}
	return f.Commit()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// maxPlotStem bounds a plot's file name without its extension: a file
// name may have 255 bytes, and a run folder's name alone may have as many.
const maxPlotStem = 160

// PlotName is a plot's file name (without extension): kind, mode and run
// as they are when they are safe ([A-Za-z0-9._-]) and short; otherwise the
// safe characters, cut to fit, and the start of the SHA-256 of the whole,
// so that two runs whose names differ only in unsafe characters, or after
// the cut, never share a file.
func PlotName(kind, mode, run string) string {
	n := "plot_" + kind + "_oracle_" + mode
	if run != "" {
		n += "_" + run
	}
	safe := unsafeName.ReplaceAllString(n, "_")
	if safe == n && len(safe) <= maxPlotStem {
		return safe
	}
	sum := sha256.Sum256([]byte(n))
	return safe[:min(len(safe), maxPlotStem-13)] + "_" + hex.EncodeToString(sum[:6])
}

// plotJob renders one plot (or, with panels, a multi-panel figure).
type plotJob struct {
	name   string
	w, h   vg.Length
	make   func() (*plot.Plot, error)
	panels func() ([][]*plot.Plot, error)
}

// run draws the plot into dir; jb tracks the temporary files.
func (j plotJob) run(jb *job.Job, dir string) error {
	if j.panels != nil {
		ps, err := j.panels()
		if err != nil {
			return fmt.Errorf("plot %s: %w", j.name, err)
		}
		return saveStage(jb, dir, j.name, ps, j.w, j.h)
	}
	p, err := j.make()
	if err != nil {
		return fmt.Errorf("plot %s: %w", j.name, err)
	}
	return savePlot(jb, dir, j.name, p, j.w, j.h)
}

func nanIfInvalid(p analysis.Prop, applicable bool) (v, lo, hi float64) {
	if !applicable || !p.Valid {
		return math.NaN(), math.NaN(), math.NaN()
	}
	return p.Value, p.Lo, p.Hi
}

// plotJobs lists every plot of the report.
func plotJobs(res *analysis.Result) []plotJob {
	var jobs []plotJob
	for _, mode := range res.Modes() {
		runs := modeRuns(res, mode)
		if len(runs) == 0 {
			continue
		}
		names := make([]string, len(runs))
		for i, rr := range runs {
			names[i] = rr.Run.Name
		}
		nm := float64(len(runs))
		width := vg.Length(math.Max(16, 4+1.6*nm)) * vg.Centimeter
		on := " (oracle " + mode + ")"
		jobs = append(jobs, plotJob{name: PlotName("stage_accuracy", mode, ""), w: width, h: 3 * 11 * vg.Centimeter, panels: func() ([][]*plot.Plot, error) {
			return stagePanels(runs, names, mode)
		}})
		jobs = append(jobs, plotJob{name: PlotName("contour_revision_detail", mode, ""), w: width, h: 12 * vg.Centimeter, make: func() (*plot.Plot, error) {
			return subBars(runs, names, benchmark.RevisionRequired, benchmark.StageContourRevision.Questions(), "Contour revision sub-questions, revision_required"+on)
		}})
		jobs = append(jobs, plotJob{name: PlotName("attribute_extraction_detail", mode, ""), w: width, h: 12 * vg.Centimeter, make: func() (*plot.Plot, error) {
			return subBars(runs, names, analysis.PooledPath, benchmark.StageAttributeExtraction.Questions(), "Attribute sub-questions, revision_required+revision_free"+on)
		}})
		jobs = append(jobs, plotJob{name: PlotName("depth_heatmap", mode, ""), w: 18 * vg.Centimeter, h: vg.Length(5+0.8*nm) * vg.Centimeter, make: func() (*plot.Plot, error) {
			z := make([][]float64, len(runs))
			text := make([][]string, len(runs))
			for i, rr := range runs {
				for _, path := range benchmark.Paths {
					d := rr.DepthOf(path, "all")
					if d.Valid {
						z[i] = append(z[i], d.Mean/float64(d.Max))
						text[i] = append(text[i], fmt.Sprintf("%.2f / %d", d.Mean, d.Max))
					} else {
						z[i] = append(z[i], math.NaN())
						text[i] = append(text[i], NAText)
					}
				}
			}
			paths := make([]string, len(benchmark.Paths))
			for i, p := range benchmark.Paths {
				paths[i] = string(p)
			}
			return heatmap("Mean depth, normalised by the path maximum"+on, "path", "", paths, names, z, text)
		}})
		for _, rr := range runs {
			jobs = append(jobs, plotJob{name: PlotName("lesion_stage", mode, rr.Run.Name), w: 20 * vg.Centimeter, h: 14 * vg.Centimeter, make: func() (*plot.Plot, error) {
				var cols []string
				type pk struct {
					path benchmark.Path
					k    benchmark.Stage
				}
				var pks []pk
				for _, path := range benchmark.Paths {
					for _, k := range benchmark.Stages {
						if benchmark.StageApplies(path, false, k) {
							cols = append(cols, fmt.Sprintf("%s stage %d", path.Short(), k))
							pks = append(pks, pk{path, k})
						}
					}
				}
				z := make([][]float64, len(res.Lesions))
				text := make([][]string, len(res.Lesions))
				for i, l := range res.Lesions {
					for _, c := range pks {
						s := rr.Stage(c.path, l, c.k)
						if s.Applicable && s.E2E.Valid {
							z[i] = append(z[i], s.E2E.Value)
							text[i] = append(text[i], pct(s.E2E.Value))
						} else {
							z[i] = append(z[i], math.NaN())
							text[i] = append(text[i], NAText)
						}
					}
				}
				return heatmap("End-to-end accuracy (%) by lesion and stage, "+rr.Run.Name+on, "", "lesion", cols, res.Lesions, z, text)
			}})
		}
	}
	return jobs
}

func subBars(runs []*analysis.RunResult, names []string, path benchmark.Path, qs []benchmark.Question, title string) (*plot.Plot, error) {
	var series []barSeries
	for _, q := range qs {
		s := barSeries{name: q.Name()}
		for _, rr := range runs {
			c := rr.SubOf(path, "all", q)
			v, lo, hi := nanIfInvalid(c.Acc, c.Applicable)
			s.val, s.lo, s.hi = append(s.val, v), append(s.lo, lo), append(s.hi, hi)
		}
		series = append(series, s)
	}
	return groupedBars(title, "accuracy (Wilson 95% CI)", names, series)
}

// stagePanels are the three panels (RR, RF, LF) of the stage-accuracy
// figure: end-to-end accuracy per model and applicable stage.
func stagePanels(runs []*analysis.RunResult, names []string, mode string) ([][]*plot.Plot, error) {
	var out [][]*plot.Plot
	for _, path := range benchmark.Paths {
		var series []barSeries
		for _, k := range benchmark.Stages {
			if !benchmark.StageApplies(path, false, k) {
				continue
			}
			s := barSeries{name: fmt.Sprintf("stage %d", k)}
			for _, rr := range runs {
				c := rr.Stage(path, "all", k)
				v, lo, hi := nanIfInvalid(c.E2E, c.Applicable)
				s.val, s.lo, s.hi = append(s.val, v), append(s.lo, lo), append(s.hi, hi)
			}
			series = append(series, s)
		}
		p, err := groupedBars(fmt.Sprintf("End-to-end accuracy by stage, %s (oracle %s)", path, mode), "accuracy (Wilson 95% CI)", names, series)
		if err != nil {
			return nil, err
		}
		out = append(out, []*plot.Plot{p})
	}
	return out, nil
}

// saveStage draws the three stage panels into one figure.
func saveStage(j *job.Job, dir, name string, panels [][]*plot.Plot, w, h vg.Length) error {
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Centimeter, PadTop: vg.Points(4), PadBottom: vg.Points(4)}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	for i, c := range plot.Align(panels, tiles, dc) {
		panels[i][0].Draw(c[0])
	}
	if err := writeTo(j, dir, name+".png", fastPNG{img}); err != nil {
		return err
	}
	svg := vgsvg.New(w, h)
	dc = draw.New(svg)
	for i, c := range plot.Align(panels, tiles, dc) {
		panels[i][0].Draw(c[0])
	}
	return writeTo(j, dir, name+".svg", svg)
}
