package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fixedwindow/ratelimit/example/lab/internal/sim"
)

// maxPlotRequests bounds the pattern a plot draws: past it the points
// merge into a smear and an SVG grows to tens of megabytes.
const maxPlotRequests = 20_000

// maxBoundaries bounds the window boundaries drawn; past it they would
// paint the background, so none is drawn and the axis label says so.
const maxBoundaries = 40

var (
	admittedColor = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	rejectedColor = color.NRGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	windowColor   = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	shortColor    = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0x70}
	worstColor    = color.NRGBA{R: 0xff, G: 0xa0, B: 0x40, A: 0x70}

	longDashes  = []vg.Length{vg.Points(5), vg.Points(3)}
	shortDashes = []vg.Length{vg.Points(1), vg.Points(2)}
)

// writePlot draws the timeline of a simulation: one row per limiter, a dot
// per admitted request and a grey cross per refused one, a shaded band
// around the admitted requests of the limiter's worst span of one window,
// dashed lines at the window boundaries and, on the layered row, dotted
// lines at its short boundaries. The x axis covers the pattern with a
// margin, so that a burst of a fifth of a second is not lost in a whole
// window. The format follows the file's extension, .svg or .png (checked
// by parseSimulateFlags); a key runs along the bottom.
func writePlot(path string, p *sim.Pattern, cfg sim.Config, results []sim.Result) error {
	win := cfg.Window
	first, last := p.Requests[0].At, p.Requests[len(p.Requests)-1].At
	pad := max((last-first)/10, win/100)
	lo, hi := first-pad, last+pad
	origin := floorTo(first, win)
	sec := func(d time.Duration) float64 { return (d - origin).Seconds() }

	pl := plot.New()
	pl.Title.Text = sim.Caption(p, cfg)
	pl.X.Label.Text = "seconds"
	if origin != 0 {
		pl.X.Label.Text = "seconds after " + time.Unix(0, 0).Add(origin).UTC().Format(time.RFC3339Nano)
	}
	pl.X.Min, pl.X.Max = sec(lo), sec(hi)
	n := len(results)
	pl.Y.Min, pl.Y.Max = -0.6, float64(n)-0.4
	row := func(i int) float64 { return float64(n - 1 - i) }
	labels := make([]string, n)
	for i, r := range results {
		worst := r.Worst(p, win)
		labels[n-1-i] = fmt.Sprintf("%s\n%d/%d, worst %s %d", r.Limiter, r.Allowed, len(p.Requests), sim.ShortDuration(win), worst)
	}
	pl.NominalY(labels...)

	firstBoundary := floorTo(lo, win) + win
	boundaries := int((hi - firstBoundary) / win)
	drawBoundaries := boundaries <= maxBoundaries
	if drawBoundaries {
		for b := firstBoundary; b <= hi; b += win {
			if err := addVLine(pl, sec(b), -0.5, float64(n)-0.5, windowColor, longDashes); err != nil {
				return err
			}
		}
	} else {
		pl.X.Label.Text += fmt.Sprintf(" (%d window boundaries, not drawn)", boundaries)
	}

	key := []legendEntry{}
	for i, r := range results {
		y := row(i)
		var admitted, rejected plotter.XYs
		var times []time.Duration
		for j, req := range p.Requests {
			if r.Admitted[j] {
				admitted = append(admitted, plotter.XY{X: sec(req.At), Y: y})
				times = append(times, req.At)
			} else {
				rejected = append(rejected, plotter.XY{X: sec(req.At), Y: y})
			}
		}
		if worst, start := sim.WorstSpanStart(times, win); worst > 0 {
			// The band is tight around the worst span's admitted requests:
			// the span itself is a whole window wide and would hide how
			// close together they came.
			stop := start
			for _, t := range times {
				if t >= start && t < start+win {
					stop = t
				}
			}
			m := (hi - lo) / 200
			band, err := plotter.NewPolygon(plotter.XYs{
				{X: sec(start - m), Y: y - 0.3}, {X: sec(stop + m), Y: y - 0.3},
				{X: sec(stop + m), Y: y + 0.3}, {X: sec(start - m), Y: y + 0.3},
			})
			if err != nil {
				return err
			}
			band.Color, band.LineStyle.Width = worstColor, 0
			pl.Add(band)
			if i == 0 {
				key = append(key, legendEntry{"worst " + sim.ShortDuration(win) + " span", band})
			}
		}
		if r.Limiter == sim.Layered && drawBoundaries && boundaries*sim.LayeredParts <= maxBoundaries {
			_, short, err := sim.LayeredRates(cfg)
			if err != nil {
				return err
			}
			for b := floorTo(lo, short.Window) + short.Window; b <= hi; b += short.Window {
				if (b-origin)%win != 0 {
					if err := addVLine(pl, sec(b), y-0.4, y+0.4, shortColor, shortDashes); err != nil {
						return err
					}
				}
			}
		}
		for _, set := range []struct {
			xys   plotter.XYs
			shape draw.GlyphDrawer
			color color.Color
		}{
			{admitted, draw.CircleGlyph{}, admittedColor},
			{rejected, draw.CrossGlyph{}, rejectedColor}, // on top: dense rows would hide them
		} {
			if len(set.xys) == 0 {
				continue
			}
			s, err := plotter.NewScatter(set.xys)
			if err != nil {
				return err
			}
			s.GlyphStyle = draw.GlyphStyle{Shape: set.shape, Radius: vg.Points(2.5), Color: set.color}
			pl.Add(s)
		}
	}
	dot, err := glyphThumb(draw.CircleGlyph{}, admittedColor)
	if err != nil {
		return err
	}
	cross, err := glyphThumb(draw.CrossGlyph{}, rejectedColor)
	if err != nil {
		return err
	}
	key = append([]legendEntry{{"admitted", dot}, {"rejected", cross}}, key...)
	if drawBoundaries {
		l, err := plotter.NewLine(plotter.XYs{{}, {}})
		if err != nil {
			return err
		}
		l.LineStyle.Color, l.LineStyle.Dashes = windowColor, longDashes
		key = append(key, legendEntry{"window boundary", l})
	}
	return savePlot(pl, key, path, 9*vg.Inch, vg.Length(1.4+0.7*float64(n))*vg.Inch)
}

// A legendEntry is one item of the key under the plot.
type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

func glyphThumb(shape draw.GlyphDrawer, c color.Color) (*plotter.Scatter, error) {
	s, err := plotter.NewScatter(plotter.XYs{{}})
	if err != nil {
		return nil, err
	}
	s.GlyphStyle = draw.GlyphStyle{Shape: shape, Radius: vg.Points(2.5), Color: c}
	return s, nil
}

func addVLine(pl *plot.Plot, x, y0, y1 float64, c color.Color, dashes []vg.Length) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: y0}, {X: x, Y: y1}})
	if err != nil {
		return err
	}
	l.LineStyle.Color, l.LineStyle.Dashes, l.LineStyle.Width = c, dashes, vg.Points(1)
	pl.Add(l)
	return nil
}

// keyHeight is the strip under the plot that holds the key, one entry
// beside the next (gonum's own legend stacks its entries inside the data
// area, where they would cover the top row).
const keyHeight = 0.35 * vg.Inch

// savePlot renders pl above a one-line key, in the format of path's
// extension, and writes the file.
func savePlot(pl *plot.Plot, key []legendEntry, path string, w, h vg.Length) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	dc := draw.New(c)
	pl.Draw(draw.Crop(dc, 0, 0, keyHeight, 0))
	cell := (w - vg.Inch) / vg.Length(len(key))
	for i, e := range key {
		l := plot.NewLegend()
		l.Left, l.Top = true, true
		l.Add(e.name, e.thumb)
		x0 := vg.Inch + cell*vg.Length(i)
		l.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x0, Y: 0},
			Max: vg.Point{X: x0 + cell, Y: keyHeight * 0.8},
		}})
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot: write %s: %w", path, err)
	}
	return nil
}

// floorTo rounds d down to a multiple of unit, toward minus infinity.
func floorTo(d, unit time.Duration) time.Duration {
	q := d / unit * unit
	if q > d {
		q -= unit
	}
	return q
}
