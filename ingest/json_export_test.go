package ingest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

func TestJSONRow(t *testing.T) {
	sch := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("n", schema.Primitive(schema.Integer), true),
		schema.NewField("price", &schema.DecimalType{Precision: 10, Scale: 2}, true),
		schema.NewField("day", schema.Primitive(schema.Date), true),
		schema.NewField("at", schema.Primitive(schema.Timestamp), true),
		schema.NewField("tags", &schema.ArrayType{ElementType: schema.Primitive(schema.String), ContainsNull: true}, true),
		schema.NewField("inner", schema.NewStruct(schema.NewField("ok", schema.Primitive(schema.Boolean), true)), true),
	)
	day, _ := time.Parse(time.DateOnly, "2024-03-01")
	tests := []struct {
		name    string
		in      string
		want    value.Row
		wantErr string
	}{
		{"all columns", `{"id": 7, "N": 3, "price": "12.50", "day": "2024-03-01", "at": "2024-03-01T10:00:00Z", "tags": ["a", null], "inner": {"ok": true}}`,
			value.Row{int64(7), int32(3), value.NewDecimal(1250, 2), value.DateOf(day), time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC), []any{"a", nil}, value.Row{true}}, ""},
		{"absent and null are null", `{"id": 1, "n": null}`, value.Row{int64(1), nil, nil, nil, nil, nil, nil}, ""},
		{"not an object", `[1, 2]`, nil, "not a JSON object"},
		{"bad JSON", `{"id": `, nil, "invalid JSON"},
		{"trailing data", `{"id": 1} {"id": 2}`, nil, "invalid JSON"},
		{"out of range", `{"id": 1, "n": 3000000000}`, nil, "column n"},
		{"wrong type", `{"id": "x"}`, nil, "column id"},
		{"fraction for an integer", `{"id": 1.5}`, nil, "column id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JSONRow(sch, []byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d values, want %d", len(got), len(tc.want))
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if gd, ok := g.(value.Decimal); ok {
					if wd, ok := w.(value.Decimal); !ok || gd.String() != wd.String() {
						t.Errorf("column %d: %v, want %v", i, g, w)
					}
					continue
				}
				if gt, ok := g.(time.Time); ok {
					if wt, ok := w.(time.Time); !ok || !gt.Equal(wt) {
						t.Errorf("column %d: %v, want %v", i, g, w)
					}
					continue
				}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("column %d: %#v, want %#v", i, g, w)
				}
			}
		})
	}
}

// TestJSONRowErrorShowsValueAsInput: a value that does not fit its column
// is shown as the input holds it: a JSON number bare, a JSON string quoted.
func TestJSONRowErrorShowsValueAsInput(t *testing.T) {
	sch := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), true),
		schema.NewField("ok", schema.Primitive(schema.Boolean), true),
		schema.NewField("x", schema.Primitive(schema.Double), true),
	)
	for _, tc := range []struct{ in, want string }{
		{`{"id": 1.5}`, "ingest: column id: 1.5 is not a long"},
		{`{"id": 99999999999999999999}`, "ingest: column id: 99999999999999999999 is not a long"},
		{`{"id": "1.5"}`, `ingest: column id: "1.5" is not a long`},
		{`{"ok": 2}`, "ingest: column ok: 2 is not a boolean"},
		{`{"ok": "yes"}`, `ingest: column ok: "yes" is not a boolean`},
		{`{"x": 1e400}`, "ingest: column x: 1e400 is not a double"},
	} {
		_, err := JSONRow(sch, []byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("JSONRow(%s) error = %v, want %s", tc.in, err, tc.want)
		}
	}
}
