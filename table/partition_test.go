package table

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// TestPartitionValueChecked: a partition value is checked against its
// column's type as a data value is (value.Codec), so an integer partition
// column refuses 2^40 instead of writing "1099511627776" into a table Spark
// then cannot read, and a decimal partition value must fit its precision.
// Nothing is written.
func TestPartitionValueChecked(t *testing.T) {
	ctx := context.Background()
	dec := &schema.DecimalType{Precision: 4, Scale: 1}
	for _, c := range []struct {
		name string
		typ  schema.Type
		v    any
		want error
	}{
		{"integer out of range", prim(schema.Integer), int64(1) << 40, ErrInvalidArgument},
		{"byte out of range", prim(schema.Byte), 300, ErrInvalidArgument},
		{"integer from uint64", prim(schema.Integer), uint64(1), ErrSchemaMismatch},
		{"decimal too wide", dec, value.MustParseDecimal("12345"), ErrInvalidArgument},
		{"long from string", prim(schema.Long), "1", ErrSchemaMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := newMemTable(t, schema.NewStruct(field("p", c.typ, true), field("v", prim(schema.Long), true)), WithPartitionColumns("p"))
			_, err := tbl.AppendRows(ctx, []Row{{c.v, int64(1)}})
			var re *RowError
			var ve *value.Error
			if !errors.Is(err, c.want) || !errors.As(err, &re) || re.Row != 0 || !errors.As(err, &ve) {
				t.Fatalf("err %v, want a *RowError for row 0 wrapping %v and a *value.Error", err, c.want)
			}
			if v := tbl.Version(); v != 0 {
				t.Errorf("a refused write committed version %d", v)
			}
		})
	}
	// In range, the value is serialised as before.
	for _, c := range []struct {
		typ  schema.Type
		v    any
		want string
	}{
		{prim(schema.Integer), int64(math.MaxInt32), "2147483647"},
		{prim(schema.String), []byte("ab"), "ab"},
		{dec, 12, "12.0"},
		{dec, int16(-3), "-3.0"},
	} {
		s, ok, err := SerializePartitionValue(c.typ, c.v)
		if err != nil || !ok || s != c.want {
			t.Errorf("SerializePartitionValue(%s, %v) = %q %v %v, want %q", c.typ, c.v, s, ok, err, c.want)
		}
	}
}

// TestRowValueErrors: a data value that does not fit its column is refused
// with an error that names row and column and matches table's sentinel,
// *RowError and *value.Error (with the reason).
func TestRowValueErrors(t *testing.T) {
	ctx := context.Background()
	st := schema.NewStruct(field("x", prim(schema.Short), false))
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("s", st, true),
		field("l", &schema.ArrayType{ElementType: prim(schema.Date), ContainsNull: false}, true))
	for _, c := range []struct {
		name     string
		row      Row
		sentinel error
		reason   error
		text     string
	}{
		{"wrong Go type", Row{"1", nil, nil}, ErrSchemaMismatch, value.ErrTypeMismatch, `row 1: column "id": schema mismatch: value "1" (a string) does not fit type long`},
		{"nested out of range", Row{int64(1), Row{40000}, nil}, ErrInvalidArgument, value.ErrOutOfRange, `row 1: column "s": invalid argument: column "x": value 40000 does not fit type short`},
		{"nested null", Row{int64(1), Row{nil}, nil}, ErrInvalidArgument, value.ErrNull, `column "s"`},
		{"null element", Row{int64(1), nil, []any{Date(1), nil}}, ErrConstraintViolation, value.ErrNull, `element 1`},
		{"element type", Row{int64(1), nil, []any{"2024-01-01"}}, ErrSchemaMismatch, value.ErrTypeMismatch, `element 0: value "2024-01-01" (a string) does not fit type date`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := newMemTable(t, sch)
			_, err := tbl.AppendRows(ctx, []Row{{int64(0), nil, nil}, c.row})
			var re *RowError
			var ve *value.Error
			if !errors.Is(err, c.sentinel) || !errors.Is(err, c.reason) || !errors.As(err, &re) || re.Row != 1 || !errors.As(err, &ve) {
				t.Fatalf("err %v, want row 1 wrapping %v and %v", err, c.sentinel, c.reason)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("err %q does not contain %q", err, c.text)
			}
			if v := tbl.Version(); v != 0 {
				t.Errorf("a refused write committed version %d", v)
			}
		})
	}
}
