package table

import (
	"errors"
	"fmt"
	"testing"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

func TestLatestPerKey(t *testing.T) {
	sch := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), true),
		schema.NewField("day", schema.Primitive(schema.String), true),
		schema.NewField("v", schema.Primitive(schema.Double), true),
		schema.NewField("s", schema.NewStruct(schema.NewField("k", schema.Primitive(schema.Integer), true)), true),
	)
	row := func(id any, day any, v float64) value.Row {
		return value.Row{id, day, v, value.Row{int32(0)}}
	}
	tests := []struct {
		name        string
		keys        []string
		rows        []value.Row
		want        []float64 // v of the kept rows, in order
		wantDropped int
		wantErr     error
	}{
		{name: "no duplicates", keys: []string{"id"},
			rows: []value.Row{row(int64(1), "a", 1), row(int64(2), "a", 2)}, want: []float64{1, 2}},
		{name: "last per key wins, at its position", keys: []string{"id"},
			rows: []value.Row{row(int64(1), "a", 1), row(int64(2), "a", 2), row(int64(1), "b", 3), row(int64(3), "a", 4), row(int64(2), "c", 5)},
			want: []float64{3, 4, 5}, wantDropped: 2},
		{name: "two keys", keys: []string{"id", "day"},
			rows: []value.Row{row(int64(1), "a", 1), row(int64(1), "b", 2), row(int64(1), "a", 3)},
			want: []float64{2, 3}, wantDropped: 1},
		{name: "null keys are all kept", keys: []string{"id"},
			rows: []value.Row{row(nil, "a", 1), row(int64(1), "a", 2), row(nil, "a", 3), row(int64(1), "a", 4)},
			want: []float64{1, 3, 4}, wantDropped: 1},
		{name: "a null in one of two keys", keys: []string{"id", "day"},
			rows: []value.Row{row(int64(1), nil, 1), row(int64(1), nil, 2)}, want: []float64{1, 2}},
		{name: "int and long values of one key are equal", keys: []string{"id"},
			rows: []value.Row{row(int64(7), "a", 1), row(int32(7), "a", 2)}, want: []float64{2}, wantDropped: 1},
		{name: "nested key", keys: []string{"s.k"},
			rows: []value.Row{row(int64(1), "a", 1), row(int64(2), "a", 2)}, want: []float64{2}, wantDropped: 1},
		{name: "no rows", keys: []string{"id"}, rows: nil, want: nil},
		{name: "missing key column", keys: []string{"nope"}, rows: []value.Row{row(int64(1), "a", 1)}, wantErr: ErrInvalidArgument},
		{name: "no key", keys: nil, rows: []value.Row{row(int64(1), "a", 1)}, wantErr: ErrInvalidArgument},
		{name: "struct key", keys: []string{"s"}, rows: []value.Row{row(int64(1), "a", 1)}, wantErr: ErrInvalidArgument},
		{name: "short row", keys: []string{"id"}, rows: []value.Row{{int64(1)}}, wantErr: ErrInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, dropped, err := MergeRows(sch, tc.rows).LatestPerKey(tc.keys...)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []float64
			for _, r := range out.rows {
				got = append(got, r[2].(float64))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || dropped != tc.wantDropped || out.Len() != len(tc.want) {
				t.Errorf("kept %v (dropped %d), want %v (dropped %d)", got, dropped, tc.want, tc.wantDropped)
			}
		})
	}
}
