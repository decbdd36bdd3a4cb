package table_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/value"
)

func TestRowsOf(t *testing.T) {
	sch := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("name", schema.Primitive(schema.String), true),
		schema.NewField("score", schema.Primitive(schema.Double), true),
	)
	type full struct {
		Name  *string `delta:"name"`
		ID    int64   `delta:"id"`
		Score float64 `delta:"score"`
	}
	type partial struct {
		ID int32 `delta:"ID"` // case-insensitive match, narrower int
	}
	type extra struct {
		ID    int64  `delta:"id"`
		Other string `delta:"other"`
	}
	type noID struct {
		Name string `delta:"name"`
	}
	type wrongType struct {
		ID string `delta:"id"`
	}
	bob := "bob"

	got, err := table.RowsOf(sch, []full{{Name: &bob, ID: 7, Score: 1.5}, {ID: 8}})
	if err != nil {
		t.Fatal(err)
	}
	want := []value.Row{{int64(7), "bob", 1.5}, {int64(8), nil, 0.0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("full: got %#v, want %#v", got, want)
	}
	got, err = table.RowsOf(sch, []*partial{{ID: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0]) != 3 || got[0][1] != nil || got[0][2] != nil {
		t.Fatalf("partial: got %#v, want id then two nulls", got)
	}
	if id, ok := got[0][0].(int64); ok && id != 3 || !ok && got[0][0] != int32(3) {
		t.Fatalf("partial: id %#v, want 3", got[0][0])
	}

	for _, tc := range []struct {
		name string
		conv func() error
		want error
	}{
		{"column not in schema", func() error { _, err := table.RowsOf(sch, []extra{{}}); return err }, table.ErrSchemaMismatch},
		{"NOT NULL column without field", func() error { _, err := table.RowsOf(sch, []noID{{}}); return err }, table.ErrSchemaMismatch},
		{"wrong type", func() error { _, err := table.RowsOf(sch, []wrongType{{}}); return err }, table.ErrSchemaMismatch},
		{"nil pointer row", func() error { _, err := table.RowsOf(sch, []*partial{nil}); return err }, table.ErrInvalidArgument},
		{"nil schema", func() error { _, err := table.RowsOf[full](nil, nil); return err }, table.ErrInvalidArgument},
		{"not a struct", func() error { _, err := table.RowsOf(sch, []int{1}); return err }, table.ErrInvalidArgument},
	} {
		if err := tc.conv(); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	var re *table.RowError
	if _, err := table.RowsOf(sch, []*partial{{ID: 1}, nil}); !errors.As(err, &re) || re.Row != 1 {
		t.Errorf("nil second row: err %v, want a *RowError for row 1", err)
	}
}

func TestDataSchemaOf(t *testing.T) {
	type row struct {
		ID    int64             `delta:"id"`
		Name  *string           `delta:"name"`
		Tags  []string          `delta:"tags"`
		Attrs map[string]string `delta:"attrs"`
		Must  *int64            `delta:"must,notnull"`
		When  time.Time         `delta:"when,timestamp_ntz"`
	}
	// Field name → nullable in SchemaOf and in DataSchemaOf.
	cases := []struct {
		name           string
		declared, data bool
	}{
		{"id", true, false},
		{"name", true, true},
		{"tags", true, true},
		{"attrs", true, true},
		{"must", false, false},
		{"when", true, false},
	}
	declared, err := table.SchemaOf[row]()
	if err != nil {
		t.Fatal(err)
	}
	data, err := table.DataSchemaOf[*row]()
	if err != nil {
		t.Fatal(err)
	}
	if len(data.Fields) != len(cases) {
		t.Fatalf("DataSchemaOf has %d fields, want %d", len(data.Fields), len(cases))
	}
	for i, c := range cases {
		d, f := declared.Fields[i], data.Fields[i]
		if d.Name != c.name || f.Name != c.name || d.Type.String() != f.Type.String() {
			t.Errorf("field %d: %s %s / %s %s, want %s of one type", i, d.Name, d.Type, f.Name, f.Type, c.name)
		}
		if d.Nullable != c.declared || f.Nullable != c.data {
			t.Errorf("%s: nullable %v (SchemaOf), %v (DataSchemaOf), want %v, %v", c.name, d.Nullable, f.Nullable, c.declared, c.data)
		}
	}
	if _, err := table.DataSchemaOf[struct{ U uint8 }](); !errors.Is(err, table.ErrInvalidArgument) {
		t.Errorf("uint8 field: err %v, want ErrInvalidArgument", err)
	}
}
