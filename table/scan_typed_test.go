package table

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

type regionRow struct {
	ID     int64     `delta:"id"`
	Region *string   `delta:"region"`
	Score  *float64  `delta:"score"`
	Name   string    `delta:"name"`
	TS     time.Time `delta:"ts"`
}

// TestScanAs reads the region table into structs: all rows, filtered,
// pointers to structs, a struct with fewer columns, and the errors for a
// field without a column or with an incompatible type.
func TestScanAs(t *testing.T) {
	tbl := regionTable(t)
	ctx := context.Background()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []regionRow
	for r, err := range ScanAs[regionRow](ctx, tbl) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 20 {
		t.Fatalf("%d rows, want 20", len(got))
	}
	first, fourth := got[0], got[8] // ids 16 (region null), 4 (score null)
	if first.ID != 16 || first.Region != nil || first.Score != nil || first.Name != "n16" || !first.TS.Equal(base.Add(16*time.Hour)) {
		t.Errorf("first row %+v", first)
	}
	if fourth.ID != 4 || fourth.Region == nil || *fourth.Region != "eu" || fourth.Score != nil {
		t.Errorf("row of id 4: %+v", fourth)
	}
	if r := got[19]; r.ID != 15 || *r.Region != "us" || *r.Score != 7.5 {
		t.Errorf("last row %+v", r)
	}

	// pointers, filter, limit
	var ids []int64
	var st ScanStats
	for r, err := range ScanAs[*regionRow](ctx, tbl, WithFilter(Col("region").Eq("us")), WithLimit(3), WithScanStats(&st)) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []int64{11, 12, 13}) || st.FilesPruned != 3 {
		t.Errorf("ids %v, pruned %d; want [11 12 13], 3", ids, st.FilesPruned)
	}

	// a struct with two columns reads only those (case-insensitive names)
	type small struct {
		Name string
		Id   int64
	}
	var names []string
	for r, err := range ScanAs[small](ctx, tbl, WithFilter(Col("id").Lt(3))) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, r.Name)
		if r.Id >= 3 {
			t.Errorf("row %+v", r)
		}
	}
	if !slices.Equal(names, []string{"n01", "n02"}) {
		t.Errorf("names %v", names)
	}

	// errors
	type missing struct {
		ID    int64 `delta:"id"`
		Other string
	}
	type wrongType struct {
		ID string `delta:"id"`
	}
	type bad struct {
		C complex64
	}
	for name, seq := range map[string]func() error{
		"missing column": func() error { return firstErr(ScanAs[missing](ctx, tbl)) },
		"wrong type":     func() error { return firstErr(ScanAs[wrongType](ctx, tbl)) },
		"bad Go type":    func() error { return firstErr(ScanAs[bad](ctx, tbl)) },
		"projection without the field": func() error {
			return firstErr(ScanAs[regionRow](ctx, tbl, WithColumns("id")))
		},
	} {
		err := seq()
		t.Logf("%s: %v", name, err)
		if err == nil || !(errors.Is(err, ErrSchemaMismatch) || errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("%s: %v, want ErrSchemaMismatch or ErrInvalidArgument", name, err)
		}
	}
}

// firstErr drains a typed scan and returns its error.
func firstErr[T any](seq func(func(T, error) bool)) error {
	var out error
	n := 0
	for _, err := range seq {
		if err != nil {
			out = err
			n++
		}
	}
	if n > 1 {
		return errors.New("more than one error")
	}
	return out
}
