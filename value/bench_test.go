package value

import (
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
)

// BenchmarkChecker validates one long, one string and one timestamp cell per
// op, through Codec.Check and through CheckerOf (the per-cell path of
// table's writes).
func BenchmarkChecker(b *testing.B) {
	types := []schema.Type{prim(schema.Long), prim(schema.String), prim(schema.Timestamp)}
	vals := []any{int64(1 << 20), "hello world", time.Now()}
	run := func(b *testing.B, fs []func(any) (int64, error)) {
		var tot int64
		for b.Loop() {
			for j, f := range fs {
				n, _ := f(vals[j])
				tot += n
			}
		}
		if tot == 0 {
			b.Fatal("no sizes")
		}
	}
	b.Run("codec", func(b *testing.B) {
		fs := make([]func(any) (int64, error), len(types))
		for i, t := range types {
			fs[i] = CodecOf(t).Check
		}
		run(b, fs)
	})
	b.Run("checker", func(b *testing.B) {
		fs := make([]func(any) (int64, error), len(types))
		for i, t := range types {
			fs[i] = CheckerOf(t)
		}
		run(b, fs)
	})
}

// BenchmarkColumnChecker validates 1,000,000 rows of the flights' shape (a
// timestamp, two longs, two strings) row by row through CheckerOf and in
// blocks of 256 rows column by column through ColumnCheckerOf.
func BenchmarkColumnChecker(b *testing.B) {
	types := []schema.Type{prim(schema.TimestampNTZ), prim(schema.Long), prim(schema.Long), prim(schema.String), prim(schema.String)}
	rows := make([]Row, 1_000_000)
	t0 := time.Date(2006, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		rows[i] = Row{t0.Add(time.Duration(i) * time.Second), int64(i % 300), int64(i % 2000), "ATL", "ORD"}
	}
	sizes := make([]int64, len(rows))
	other := func(any) (int64, error) { return 0, nil }
	b.Run("row", func(b *testing.B) {
		fs := make([]func(any) (int64, error), len(types))
		for i, t := range types {
			fs[i] = CheckerOf(t)
		}
		for b.Loop() {
			for i, row := range rows {
				var s int64
				for j, f := range fs {
					n, _ := f(row[j])
					s += n
				}
				sizes[i] = s
			}
		}
	})
	b.Run("column", func(b *testing.B) {
		fs := make([]func([]Row, int, []int64) (int, error), len(types))
		for i, t := range types {
			fs[i] = ColumnCheckerOf(t, other)
		}
		for b.Loop() {
			clear(sizes)
			for a := 0; a < len(rows); a += 256 {
				e := min(len(rows), a+256)
				for j, f := range fs {
					_, _ = f(rows[a:e], j, sizes[a:e])
				}
			}
		}
	})
}
