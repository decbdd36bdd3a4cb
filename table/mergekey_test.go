package table

import (
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// TestMergeKeyEncoding checks the key encoding MERGE joins on: a target
// row's key (appendKey, per row read) equals the source row's (keyString)
// whatever Go type holds an integer or date key, nulls never match, and
// integer and date keys are encoded without allocating (the per-row cost
// of a MERGE that reads 10,000,000 target rows: BENCHMARKS.md P11).
func TestMergeKeyEncoding(t *testing.T) {
	sch := &schema.StructType{Fields: []*schema.StructField{
		schema.NewField("id", schema.Primitive(schema.Long), true),
		schema.NewField("date", schema.Primitive(schema.Date), true),
		schema.NewField("name", schema.Primitive(schema.String), true),
		schema.NewField("s", schema.Primitive(schema.Short), true),
	}}
	tbl := newMemTable(t, sch, WithPartitionColumns("date"))
	day := value.DateOf(time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		name     string
		keys     []string
		src, tgt value.Row
		equal    bool
	}{
		{"long and date", []string{"id", "date"}, value.Row{int64(42), day, "a", int16(1)}, value.Row{int64(42), day, "b", int16(2)}, true},
		{"date as time.Time in the source", []string{"id", "date"}, value.Row{int64(42), day.Time(), "a", int16(1)}, value.Row{int64(42), day, "b", int16(2)}, true},
		{"long as int in the source", []string{"id"}, value.Row{42, day, "a", int16(1)}, value.Row{int64(42), day, "b", int16(2)}, true},
		{"short", []string{"s"}, value.Row{int64(1), day, "a", int16(-7)}, value.Row{int64(2), day, "b", int16(-7)}, true},
		{"string", []string{"name", "id"}, value.Row{int64(1), day, "x:1", int16(1)}, value.Row{int64(1), day, "x:1", int16(1)}, true},
		{"different id", []string{"id", "date"}, value.Row{int64(42), day, "a", int16(1)}, value.Row{int64(4), day, "a", int16(1)}, false},
		{"different date", []string{"id", "date"}, value.Row{int64(42), day, "a", int16(1)}, value.Row{int64(42), day + 1, "a", int16(1)}, false},
		// "1:1" + "2:12" must not collide with "2:11" + "1:2".
		{"no collision of concatenations", []string{"id", "s"}, value.Row{int64(1), day, "a", int16(12)}, value.Row{int64(11), day, "a", int16(2)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewMerge(MergeRows(sch, []value.Row{c.src}), MergeOn(c.keys...)).WhenMatched().UpdateAll()
			e := &mergeExec{t: tbl, b: m, cfg: newWriteConfig(nil), src: m.src}
			if err := e.bind(); err != nil {
				t.Fatal(err)
			}
			sk, ok, err := e.keyString(value.Row{nil, c.src}, false)
			if err != nil || !ok {
				t.Fatalf("source key: %q %v %v", sk, ok, err)
			}
			tk, ok, err := e.appendKey(nil, value.Row{c.tgt, nil}, true)
			if err != nil || !ok {
				t.Fatalf("target key: %q %v %v", tk, ok, err)
			}
			if (sk == string(tk)) != c.equal {
				t.Errorf("source key %q, target key %q: equal %v, want %v", sk, tk, sk == string(tk), c.equal)
			}
		})
	}
	m := NewMerge(MergeRows(sch, nil), MergeOn("id", "date")).WhenMatched().UpdateAll()
	e := &mergeExec{t: tbl, b: m, cfg: newWriteConfig(nil), src: m.src}
	if err := e.bind(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.appendKey(nil, value.Row{value.Row{nil, day, "a", int16(1)}, nil}, true); ok || err != nil {
		t.Errorf("a null key: ok %v, err %v; want no key", ok, err)
	}
	row := value.Row{value.Row{int64(9_876_543), day, "a", int16(1)}, nil}
	index := map[string][]int{"7:9876543" + "5:" + "19787": {0}}
	buf := make([]byte, 0, 64)
	var hits int
	allocs := testing.AllocsPerRun(100, func() {
		var ok bool
		buf, ok, _ = e.appendKey(buf[:0], row, true)
		if ok {
			hits += len(index[string(buf)])
		}
	})
	if hits == 0 || allocs != 0 {
		t.Errorf("key %q: %d hits, %v allocations per target row; want hits and 0", buf, hits, allocs)
	}
}
