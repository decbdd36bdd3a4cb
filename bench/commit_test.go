package bench

import (
	"strings"
	"testing"
	"time"
)

// TestAddSeries checks each series a P1 metric name selects, its value and
// unit, and that a name of no series is an error that adds nothing.
func TestAddSeries(t *testing.T) {
	ds := func(ms ...int) []time.Duration {
		var out []time.Duration
		for _, m := range ms {
			out = append(out, time.Duration(m)*time.Millisecond)
		}
		return out
	}
	s := commitSeries{commits: ds(10, 20, 30, 40), plain: ds(10, 20), puts: ds(5, 5, 10, 10), cpWait: ds(7, 9)}
	fig := &Figure{}
	got, err := fig.addSeries("x_", s, "commit_p50", "deltakit_commit_p99", "bare_put_p50", "background_checkpoint_p50",
		"ratio_p99", "ratio_p99_no_checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	want := []Metric{
		{Name: "x_commit_p50", Value: ms(quantile(s.commits, 0.5)), Unit: "ms"},
		{Name: "x_deltakit_commit_p99", Value: ms(quantile(s.commits, 0.99)), Unit: "ms"},
		{Name: "x_bare_put_p50", Value: ms(quantile(s.puts, 0.5)), Unit: "ms"},
		{Name: "x_background_checkpoint_p50", Value: ms(quantile(s.cpWait, 0.5)), Unit: "ms"},
		{Name: "x_ratio_p99", Value: ratio(quantile(s.commits, 0.99), quantile(s.puts, 0.99)), Unit: "x"},
		{Name: "x_ratio_p99_no_checkpoint", Value: ratio(quantile(s.plain, 0.99), quantile(s.puts, 0.99)), Unit: "x"},
	}
	if len(got) != len(want) || len(fig.Metrics) != len(want) {
		t.Fatalf("got %d metrics (%d in fig), want %d", len(got), len(fig.Metrics), len(want))
	}
	for i, w := range want {
		if *got[i] != w || fig.Metrics[i] != got[i] {
			t.Errorf("metric %d = %+v, want %+v", i, *got[i], w)
		}
	}
	if want[4].Value == want[5].Value || want[0].Value == want[1].Value {
		t.Fatalf("test data does not tell the series apart: %+v", want)
	}
	for _, bad := range []string{"commit", "commit_p100", "nope_p50", "bare_put_p50_no_checkpoint"} {
		f := &Figure{}
		if _, err := f.addSeries("", s, bad); err == nil || !strings.Contains(err.Error(), bad) || len(f.Metrics) != 0 {
			t.Errorf("addSeries(%q) = %v with %d metrics, want an error naming it and none", bad, err, len(f.Metrics))
		}
	}
}
