package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/deltakit/deltakit/bench"
)

// output prints a report in one format.
type output interface {
	Report(r *bench.Report) error
}

func newOutput(format string, w io.Writer) (output, error) {
	switch format {
	case "table", "text":
		return tableOutput{w}, nil
	case "json":
		return jsonOutput{w}, nil
	}
	return nil, fmt.Errorf("unknown output format %q (want table or json)", format)
}

// jsonOutput prints the report as indented JSON with the stable keys of
// bench.Report.
type jsonOutput struct{ w io.Writer }

func (o jsonOutput) Report(r *bench.Report) error {
	enc := json.NewEncoder(o.w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// tableOutput prints one block per figure: its setup, one aligned line per
// metric with the goal and whether it was met, and notes.
type tableOutput struct{ w io.Writer }

func (o tableOutput) Report(r *bench.Report) error {
	m := r.Machine
	fmt.Fprintf(o.w, "deltabench %s mode, %s, %s, %d CPUs (GOMAXPROCS %d), %d MiB, %s %s/%s, %.0f s\n",
		r.Mode, r.Date.Format("2006-01-02 15:04 MST"), m.CPUModel, m.NumCPU, m.GOMAXPROCS, m.MemTotalMB, m.GoVersion, m.OS, m.Arch, r.Seconds)
	for _, f := range r.Figures {
		fmt.Fprintf(o.w, "\n%s %s (%.1f s)\n", f.ID, f.Title, f.Seconds)
		if f.Setup != "" {
			fmt.Fprintf(o.w, "   %s\n", f.Setup)
		}
		if f.Skipped != "" {
			fmt.Fprintf(o.w, "   SKIPPED: %s\n", f.Skipped)
		}
		nameW, valW, unitW := 0, 0, 0
		for _, x := range f.Metrics {
			nameW, valW, unitW = max(nameW, len(x.Name)), max(valW, len(metricValue(x))), max(unitW, len(x.Unit))
		}
		for _, x := range f.Metrics {
			line := fmt.Sprintf("   %-*s  %*s %-*s", nameW, x.Name, valW, metricValue(x), unitW, x.Unit)
			if x.Met != nil {
				goal := x.Goal
				if x.Unit != "x" && x.Unit != "" {
					goal += " " + x.Unit
				}
				line += fmt.Sprintf("  goal %s: %s", goal, map[bool]string{true: "met", false: "MISSED"}[*x.Met])
			}
			fmt.Fprintln(o.w, strings.TrimRight(line, " "))
		}
		for _, n := range f.Notes {
			fmt.Fprintf(o.w, "   note: %s\n", n)
		}
	}
	return nil
}

// metricValue prints x's value: counts, bytes and versions as whole
// numbers, the rest with formatValue.
func metricValue(x *bench.Metric) string {
	if (x.Unit == "count" || x.Unit == "B" || x.Unit == "version") && x.Value == math.Trunc(x.Value) {
		return groupThousands(fmt.Sprintf("%.0f", x.Value))
	}
	return formatValue(x.Value)
}

// formatValue prints three significant digits for small values and whole
// numbers with thousands separators for large ones.
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 10_000:
		return groupThousands(fmt.Sprintf("%.0f", v))
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1 || a == 0:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
