package bench

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// series is one line of the plot: a kind at one speed-up.
type series struct {
	kind    string
	speedUp float64
	wall    plotter.XYs
	ideal   plotter.XYs
	base    plotter.XYs
	over    plotter.XYs
}

// plotSeries groups the runs by kind and speed-up, each sorted by N.
func plotSeries(runs []Run) []*series {
	var out []*series
	find := func(kind string, su float64) *series {
		for _, s := range out {
			if s.kind == kind && s.speedUp == su {
				return s
			}
		}
		s := &series{kind: kind, speedUp: su}
		out = append(out, s)
		return s
	}
	for _, run := range runs {
		if run.WallSec <= 0 {
			continue
		}
		s := find(run.Kind, run.SpeedUp)
		x := float64(run.N)
		s.wall = append(s.wall, plotter.XY{X: x, Y: run.WallSec})
		s.ideal = append(s.ideal, plotter.XY{X: x, Y: max(run.IdealSec, 1e-3)})
		s.over = append(s.over, plotter.XY{X: x, Y: run.Overhead})
		if run.Baseline != nil && run.Baseline.WallSec > 0 {
			s.base = append(s.base, plotter.XY{X: x, Y: run.Baseline.WallSec})
		}
	}
	for _, s := range out {
		for _, xys := range []plotter.XYs{s.wall, s.ideal, s.base, s.over} {
			sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].kind != out[j].kind {
			return out[i].kind < out[j].kind
		}
		return out[i].speedUp > out[j].speedUp
	})
	return out
}

// plot draws wall, ideal and baseline against N (log-log) and the overhead
// wall/ideal against N into base.svg and base.png: one colour per kind,
// hollow markers at the configured speed-up, filled ones at any other
// (the real-time runs at speed-up 1).
func (r *Report) plot(base string) error {
	top := plot.New()
	top.Title.Text = "Wall against ideal over fleet size"
	top.X.Label.Text = "N (updates)"
	top.Y.Label.Text = "seconds"
	top.X.Scale, top.Y.Scale = plot.LogScale{}, plot.LogScale{}
	top.X.Tick.Marker, top.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	top.Legend.Top, top.Legend.Left = true, true
	bottom := plot.New()
	bottom.Title.Text = fmt.Sprintf("Overhead wall / ideal (P=%d)", r.Config.Concurrency)
	bottom.X.Label.Text = "N (updates)"
	bottom.Y.Label.Text = "wall / ideal"
	bottom.X.Scale = plot.LogScale{}
	bottom.X.Tick.Marker = plot.LogTicks{Prec: -1}
	bottom.Y.Min = 0
	bottom.Legend.Top = true

	all := plotSeries(r.Runs)
	setRanges(all, top, bottom)
	kinds := map[string]int{}
	for _, s := range all {
		if _, ok := kinds[s.kind]; !ok {
			kinds[s.kind] = len(kinds)
		}
		col := plotutil.Color(kinds[s.kind])
		label, shapes := s.kind, []int{0, 1, 2}
		if s.speedUp != r.Config.SpeedUp {
			label, shapes = fmt.Sprintf("%s, speed-up %g", s.kind, s.speedUp), []int{5, 6, 5}
		}
		lines := []struct {
			name   string
			xys    plotter.XYs
			dashes []vg.Length
			shape  int
		}{
			{label + ": fleetsaga", s.wall, nil, shapes[0]},
			{label + ": ideal ceil(N/P)×t", s.ideal, []vg.Length{vg.Points(5), vg.Points(3)}, shapes[1]},
			{fmt.Sprintf("%s: loop at concurrency %d", label, r.Config.BaselineConcurrency), s.base, []vg.Length{vg.Points(1), vg.Points(2)}, shapes[2]},
		}
		for _, ln := range lines {
			if err := addLine(top, ln.name, ln.xys, col, ln.dashes, ln.shape); err != nil {
				return err
			}
		}
		if err := addLine(bottom, label, s.over, col, nil, shapes[0]); err != nil {
			return err
		}
	}
	goal := plotter.NewFunction(func(float64) float64 { return 1.05 })
	goal.Color = color.RGBA{R: 200, A: 255}
	goal.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	bottom.Add(goal)
	bottom.Legend.Add("goal 1.05 at speed-up 1", goal)
	return savePlots(base, top, bottom)
}

func addLine(p *plot.Plot, name string, xys plotter.XYs, col color.Color, dashes []vg.Length, shape int) error {
	if len(xys) == 0 {
		return nil
	}
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, l.Dashes = col, dashes
	pts.Color, pts.Shape = col, plotutil.Shape(shape)
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

// setRanges sets explicit axis ranges: a log axis over a single N would be
// degenerate.
func setRanges(all []*series, top, bottom *plot.Plot) {
	minX, maxX, minY, maxY := 0.0, 0.0, 0.0, 0.0
	for _, s := range all {
		for _, xys := range []plotter.XYs{s.wall, s.ideal, s.base} {
			for _, p := range xys {
				if minX == 0 || p.X < minX {
					minX = p.X
				}
				if minY == 0 || p.Y < minY {
					minY = p.Y
				}
				maxX, maxY = max(maxX, p.X), max(maxY, p.Y)
			}
		}
	}
	if minX > 0 {
		top.X.Min, top.X.Max = minX/2, maxX*2
		bottom.X.Min, bottom.X.Max = minX/2, maxX*2
		top.Y.Min, top.Y.Max = minY/2, maxY*2
	}
}

// savePlots stacks top over bottom into base.svg and base.png.
func savePlots(base string, top, bottom *plot.Plot) error {
	plots := [][]*plot.Plot{{top}, {bottom}}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	w, h := vg.Points(640), vg.Points(860)
	svg := vgsvg.New(w, h)
	png := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))}
	for _, c := range []vg.CanvasSizer{svg, png} {
		canvases := plot.Align(plots, tiles, draw.New(c))
		top.Draw(canvases[0][0])
		bottom.Draw(canvases[1][0])
	}
	for path, wt := range map[string]io.WriterTo{base + ".svg": svg, base + ".png": png} {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := wt.WriteTo(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}
