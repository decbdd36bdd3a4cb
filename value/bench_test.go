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
