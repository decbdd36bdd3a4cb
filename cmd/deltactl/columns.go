package main

import (
	"io"
	"strings"

	"github.com/rivo/uniseg"
)

// columnWriter aligns tab-separated cells in columns, as text/tabwriter
// does with padding spaces, but measures cells by their display width on a
// terminal (uniseg.StringWidth: East Asian wide characters such as 東京
// take two columns, combining marks none) instead of by runes. Lines are
// buffered until Flush; the last cell of a line is not padded.
type columnWriter struct {
	w       io.Writer
	padding int
	lines   [][]string
	partial strings.Builder
}

func newColumnWriter(w io.Writer, padding int) *columnWriter {
	return &columnWriter{w: w, padding: padding}
}

// Write buffers p; each "\n" ends a line, each "\t" a cell.
func (c *columnWriter) Write(p []byte) (int, error) {
	s := string(p)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			c.partial.WriteString(s)
			return len(p), nil
		}
		c.partial.WriteString(s[:i])
		c.lines = append(c.lines, strings.Split(c.partial.String(), "\t"))
		c.partial.Reset()
		s = s[i+1:]
	}
}

// Flush writes the buffered lines, aligned.
func (c *columnWriter) Flush() error {
	if c.partial.Len() > 0 {
		c.lines = append(c.lines, strings.Split(c.partial.String(), "\t"))
		c.partial.Reset()
	}
	var widths []int
	for _, cells := range c.lines {
		for i, cell := range cells[:len(cells)-1] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], uniseg.StringWidth(cell))
		}
	}
	var b strings.Builder
	for _, cells := range c.lines {
		for i, cell := range cells {
			b.WriteString(cell)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-uniseg.StringWidth(cell)+c.padding))
			}
		}
		b.WriteByte('\n')
	}
	c.lines = nil
	_, err := io.WriteString(c.w, b.String())
	return err
}
