package main

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"time"
)

// The HTML report is one file: the template's CSS and the plots, bar
// charts drawn here as inline SVG; no script, font, image or style sheet
// is fetched when it is viewed.

//go:embed reporthtml.tmpl
var reportHTMLTemplate string

var reportHTML = template.Must(template.New("report").Funcs(template.FuncMap{
	"bytes": humanBytes,
	"pct":   func(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" },
	"fixed": func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
	"dur":   durationText,
	"ops":   opList,
	"dash":  orDash,
	"rows":  rowsText,
}).Parse(reportHTMLTemplate))

// The plots' colours (the HTML test looks for them in the screenshot).
const (
	colorSizeBar   = "#1f77b4" // file-size histogram, files at least the small-file size
	colorSmallBar  = "#e4572e" // file-size histogram, small files
	colorPartBytes = "#4c9f70" // bytes per partition
	colorPartRows  = "#76b7b2" // rows per partition
	colorDVBar     = "#b07aa1" // deletion-vector share up to the threshold
	colorDVOver    = "#7a3b69" // deletion-vector share over the threshold
	colorOther     = "#999999" // operations past the palette
)

// opColors colour the operations of the commits plot, most frequent first.
var opColors = []string{"#f28e2b", "#4e79a7", "#edc948", "#59a14f", "#e15759", "#9c755f", "#ff9da7", "#bab0ac"}

// svgChart is one plot: rectangles, lines and text in a viewBox of Width ×
// Height pixels. Empty, when set, is shown instead of a plot without data.
type svgChart struct {
	ID            string
	Width, Height int
	Bars          []svgBar
	Lines         []svgLine
	Texts         []svgText
	Legend        []svgLegend
	Empty         string
}

// svgBar is a rectangle; Value is its datum (data-value), Title its
// tooltip.
type svgBar struct {
	X, Y, W, H int
	Fill       string
	Value      int64
	Title      string
}

type svgLine struct{ X1, Y1, X2, Y2 int }

// svgText is a label; Anchor is start, middle or end; Rotate turns it
// about its anchor, in degrees.
type svgText struct {
	X, Y   int
	Anchor string
	Rotate int
	Text   string
}

type svgLegend struct {
	Fill, Text string
}

// Plot layout: margins around the plotting area.
const (
	plotW   = 560
	plotH   = 240
	marginL = 56
	marginR = 12
	marginT = 12
	marginB = 64
	innerW  = plotW - marginL - marginR
	innerH  = plotH - marginT - marginB
)

// vbars lays out vertical bars of values over labels, with a y axis to
// the largest value.
func vbars(id string, labels []string, values []int64, fills []string, titles []string, yName string) *svgChart {
	c := &svgChart{ID: id, Width: plotW, Height: plotH}
	var most int64
	for _, v := range values {
		most = max(most, v)
	}
	if len(values) == 0 || most == 0 {
		c.Empty = "no data"
		return c
	}
	slot := innerW / len(values)
	gap := max(slot/6, 1)
	if slot < 4 {
		gap = 0
	}
	for i, v := range values {
		h := int(math.Round(float64(v) * innerH / float64(most)))
		if v > 0 {
			h = max(h, 1)
		}
		x := marginL + i*slot
		w := min(max(slot-gap, 1), 60)
		c.Bars = append(c.Bars, svgBar{X: x + (slot-w)/2, Y: marginT + innerH - h, W: w, H: h, Fill: fills[i], Value: v, Title: titles[i]})
		every := max(1, (len(values)+11)/12) // at most about 12 labels
		if i%every == 0 {
			c.Texts = append(c.Texts, svgText{X: x + slot/2, Y: marginT + innerH + 12, Anchor: "end", Rotate: -40, Text: labels[i]})
		}
	}
	c.axes(most, yName)
	return c
}

// axes draws the x and y axes and three y ticks up to most.
func (c *svgChart) axes(most int64, yName string) {
	c.Lines = append(c.Lines, svgLine{marginL, marginT + innerH, marginL + innerW, marginT + innerH}, svgLine{marginL, marginT, marginL, marginT + innerH})
	for _, f := range []float64{0, 0.5, 1} {
		v := int64(math.Round(float64(most) * f))
		y := marginT + innerH - int(math.Round(float64(v)*innerH/float64(most)))
		c.Texts = append(c.Texts, svgText{X: marginL - 6, Y: y + 4, Anchor: "end", Text: strconv.FormatInt(v, 10)})
		c.Lines = append(c.Lines, svgLine{marginL - 3, y, marginL, y})
	}
	c.Texts = append(c.Texts, svgText{X: 14, Y: marginT + innerH/2, Anchor: "middle", Rotate: -90, Text: yName})
}

func sizeChart(v *ReportView) *svgChart {
	var labels, fills, titles []string
	var values []int64
	for _, b := range v.SizeHistogram {
		labels = append(labels, humanBytes(b.Min))
		values = append(values, int64(b.Files))
		fill := colorSizeBar
		if b.Max <= v.Settings.SmallFileSize {
			fill = colorSmallBar
		}
		fills = append(fills, fill)
		titles = append(titles, fmt.Sprintf("%s: %d file(s), %s", sizeRange(b), b.Files, humanBytes(b.Bytes)))
	}
	c := vbars("plot-sizes", labels, values, fills, titles, "files")
	if c.Empty == "" {
		c.Legend = []svgLegend{{colorSmallBar, "below " + humanBytes(v.Settings.SmallFileSize) + " (small)"}, {colorSizeBar, "at least " + humanBytes(v.Settings.SmallFileSize)}}
	}
	return c
}

func dvChart(v *ReportView) *svgChart {
	var labels, fills, titles []string
	var values []int64
	for _, b := range v.DeletionVectors.Histogram {
		labels = append(labels, shareRange(b))
		values = append(values, int64(b.Files))
		fill := colorDVBar
		if b.Min >= v.Settings.MaxDeletedRowsRatio {
			fill = colorDVOver
		}
		fills = append(fills, fill)
		titles = append(titles, fmt.Sprintf("%s of the rows deleted: %d file(s)", shareRange(b), b.Files))
	}
	c := vbars("plot-dv", labels, values, fills, titles, "files")
	switch {
	case v.DeletionVectors.Files == 0:
		c.Empty = "no file has a deletion vector"
	case c.Empty != "":
		c.Empty = "no file with a deletion vector has a row count"
	default:
		pct := strconv.FormatFloat(v.Settings.MaxDeletedRowsRatio*100, 'f', -1, 64) + "%"
		c.Legend = []svgLegend{{colorDVBar, "up to " + pct}, {colorDVOver, "over " + pct + " (optimize rewrites them)"}}
	}
	return c
}

// partitionChart draws a row per partition of Top: its bytes and its
// rows as horizontal bars.
func partitionChart(v *ReportView) *svgChart {
	top := v.Partitions.Top
	const rowH, nameW, barW, gapW = 22, 170, 130, 80
	c := &svgChart{ID: "plot-partitions", Width: plotW, Height: marginT + 20 + rowH*len(top) + 8}
	if len(top) == 0 {
		c.Empty = "no partitions"
		c.Height = plotH
		return c
	}
	var mostB, mostR int64
	for _, p := range top {
		mostB, mostR = max(mostB, p.Bytes), max(mostR, p.Rows)
	}
	x0, x1 := nameW, nameW+barW+gapW
	c.Texts = append(c.Texts, svgText{X: x0, Y: marginT + 8, Anchor: "start", Text: "bytes"}, svgText{X: x1, Y: marginT + 8, Anchor: "start", Text: "rows"})
	for i, p := range top {
		y := marginT + 20 + i*rowH
		name := p.Name
		if r := []rune(name); len(r) > 26 {
			name = string(r[:25]) + "…"
		}
		c.Texts = append(c.Texts, svgText{X: nameW - 6, Y: y + 14, Anchor: "end", Text: name})
		wb := scaled(p.Bytes, mostB, barW)
		wr := scaled(p.Rows, mostR, barW)
		c.Bars = append(c.Bars,
			svgBar{X: x0, Y: y + 3, W: wb, H: rowH - 6, Fill: colorPartBytes, Value: p.Bytes, Title: fmt.Sprintf("%s: %s in %d file(s)", p.Name, humanBytes(p.Bytes), p.Files)},
			svgBar{X: x1, Y: y + 3, W: wr, H: rowH - 6, Fill: colorPartRows, Value: p.Rows, Title: fmt.Sprintf("%s: %d rows", p.Name, p.Rows)})
		c.Texts = append(c.Texts, svgText{X: x0 + wb + 4, Y: y + 14, Anchor: "start", Text: humanBytes(p.Bytes)},
			svgText{X: x1 + wr + 4, Y: y + 14, Anchor: "start", Text: strconv.FormatInt(p.Rows, 10)})
	}
	return c
}

// scaled is n of most in width pixels, at least 1 for n > 0.
func scaled(n, most int64, width int) int {
	if most <= 0 || n <= 0 {
		return 0
	}
	return max(int(math.Round(float64(n)*float64(width)/float64(most))), 1)
}

// commitsChart draws the commits per hour on a time axis from the first
// hour with commits to the last, each hour's bar stacked by operation.
func commitsChart(v *ReportView) *svgChart {
	c := &svgChart{ID: "plot-commits", Width: plotW, Height: plotH}
	type hour struct {
		at time.Time
		h  ReportHourView
	}
	var hours []hour
	for _, h := range v.Commits.Hours {
		t, err := time.Parse(timeFormat, h.Start)
		if err != nil {
			continue
		}
		hours = append(hours, hour{t, h})
	}
	if len(hours) == 0 {
		c.Empty = "no commits read"
		return c
	}
	color := map[string]string{}
	for i, o := range v.Commits.Operations {
		fill := colorOther
		if i < len(opColors) {
			fill = opColors[i]
			c.Legend = append(c.Legend, svgLegend{fill, orDash(o.Operation)})
		}
		color[o.Operation] = fill
	}
	if len(v.Commits.Operations) > len(opColors) {
		c.Legend = append(c.Legend, svgLegend{colorOther, "other"})
	}
	first, last := hours[0].at, hours[len(hours)-1].at
	span := int(last.Sub(first)/time.Hour) + 1
	slot := float64(innerW) / float64(span)
	w := min(max(int(slot*0.8), 1), 48)
	var most int64
	for _, h := range hours {
		most = max(most, int64(h.h.Commits))
	}
	for _, h := range hours {
		x := marginL + int(float64(h.at.Sub(first)/time.Hour)*slot+(slot-float64(w))/2)
		y := marginT + innerH
		done := 0
		for _, o := range h.h.Operations {
			done += o.Commits
			top := marginT + innerH - int(math.Round(float64(done)*innerH/float64(most)))
			c.Bars = append(c.Bars, svgBar{X: x, Y: top, W: w, H: max(y-top, 1), Fill: color[o.Operation], Value: int64(o.Commits),
				Title: fmt.Sprintf("%s: %d %s", h.at.Format("2006-01-02 15:04"), o.Commits, orDash(o.Operation))})
			y = top
		}
	}
	c.axes(most, "commits per hour")
	for _, at := range []time.Time{first, first.Add(time.Duration(span/2) * time.Hour), last} {
		x := marginL + int(float64(at.Sub(first)/time.Hour)*slot+slot/2)
		c.Texts = append(c.Texts, svgText{X: x, Y: marginT + innerH + 14, Anchor: "middle", Text: at.Format("01-02 15:04")})
		if span == 1 {
			break
		}
	}
	c.Texts = append(c.Texts, svgText{X: marginL + innerW/2, Y: marginT + innerH + 30, Anchor: "middle", Text: "hour (UTC)"})
	return c
}

// renderReportHTML writes the report as one HTML document.
func renderReportHTML(w io.Writer, v *ReportView) error {
	return reportHTML.Execute(w, struct {
		*ReportView
		SizesPlot, PartitionsPlot, DVPlot, CommitsPlot *svgChart
	}{v, sizeChart(v), partitionChart(v), dvChart(v), commitsChart(v)})
}
