package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// TestSparkDivisionByZeroAgreement (issue 31 item 6): an UPDATE that
// divides by zero fails in Spark (DIVIDE_BY_ZERO: its default ANSI mode)
// and in deltakit (expr.ErrDivideByZero), for a literal zero and for a
// zero value in a row, and neither changes the table: Spark reads the
// rows deltakit wrote.
func TestSparkDivisionByZeroAgreement(t *testing.T) {
	spark := testsupport.Spark(t)
	ctx := context.Background()
	dir := t.TempDir()
	sch := schema.NewStruct(field("id", prim(schema.Long), true), field("v", prim(schema.Long), true),
		field("w", prim(schema.Long), true), field("d", prim(schema.Double), true))
	rows := []value.Row{{int64(1), int64(10), int64(0), 1.5}, {int64(2), int64(20), int64(4), 2.5}}
	tbl, err := Create(ctx, dir, sch)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tbl.AppendRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		col, val string
		set      map[string]Value
	}{
		{"v", "v / 0", map[string]Value{"v": Div(Col("v"), 0)}},
		{"d", "d / 0", map[string]Value{"d": Div(Col("d"), 0)}},
		{"d", "v / w", map[string]Value{"d": Div(Col("v"), Col("w"))}},
	} {
		// Spark's UPDATE fails with TASK_WRITE_FAILED caused by
		// DIVIDE_BY_ZERO (the oracle reports the outer condition); the
		// value alone fails with DIVIDE_BY_ZERO.
		if _, serr := spark.SQL(fmt.Sprintf("UPDATE delta.`%s` SET %s = %s", dir, tc.col, tc.val)); serr == nil {
			t.Errorf("Spark SET %s = %s succeeded", tc.col, tc.val)
		}
		_, serr := spark.SQL(fmt.Sprintf("SELECT %s FROM delta.`%s`", tc.val, dir))
		var se *testsupport.SparkError
		if !errors.As(serr, &se) || se.Condition != "DIVIDE_BY_ZERO" {
			t.Errorf("Spark SELECT %s: %v, want DIVIDE_BY_ZERO", tc.val, serr)
		}
		if _, _, err := tbl.Update(ctx, nil, tc.set); !errors.Is(err, expr.ErrDivideByZero) || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("deltakit SET %s = %s: %v, want expr.ErrDivideByZero", tc.col, tc.val, err)
		}
	}
	res, err := spark.Read(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sparkResultRows(res), sparkRows(rows); !slices.Equal(got, want) {
		t.Errorf("Spark read %v, want %v (the failed updates changed the table)", got, want)
	}
	if v, err := tbl.Refresh(ctx); err != nil || v.Version() != 1 {
		t.Errorf("version after the failed updates: %v (%v), want 1", v, err)
	}
}
