package table

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/txlog"
)

// ErrConstraintViolation is wrapped when a write holds a row that violates
// a table constraint: a CHECK constraint (table property
// delta.constraints.<name>, spec "Check Constraints"), a SQL invariant
// (field metadata delta.invariants) or a NOT NULL column (spec "Column
// Invariants"). The write then writes nothing. CHECK and invariant
// violations are *ConstraintViolationError; NOT NULL violations also match
// ErrInvalidArgument and are *RowError naming the row and column.
var ErrConstraintViolation = errors.New("constraint violated")

// ErrUnsupportedConstraint is wrapped when a table has a constraint whose
// expression deltakit cannot parse or evaluate (functions, arithmetic,
// comparisons of two columns, ...): writes to such a table are refused, by
// constraint name, rather than committing rows the constraint might forbid.
// The expressions deltakit evaluates are those of ParsePredicate.
var ErrUnsupportedConstraint = errors.New("unsupported constraint")

// ConstraintViolationError is a row that violates a CHECK constraint or an
// invariant. It matches ErrConstraintViolation.
type ConstraintViolationError struct {
	Kind       string // "CHECK constraint" or "invariant"
	Name       string // the constraint's name (after delta.constraints.), or the invariant's column
	Expression string // the constraint's SQL expression as stored in the table
	Row        int    // index of the first violating row in the written batch
	// Values are the violating row's values of the columns the expression
	// references, as "col => value" (SQL literal syntax), in order of
	// appearance.
	Values []string
}

// Error names the constraint, its expression, the row and its values, as
// Spark's DELTA_VIOLATE_CONSTRAINT_WITH_VALUES does.
func (e *ConstraintViolationError) Error() string {
	return fmt.Sprintf("%s %s (%s) violated by row %d with values: %s", e.Kind, e.Name, e.Expression, e.Row, strings.Join(e.Values, ", "))
}

// Unwrap returns ErrConstraintViolation.
func (e *ConstraintViolationError) Unwrap() error { return ErrConstraintViolation }

// notNullError is the cause of a NOT NULL violation: both an invalid
// argument (as before constraints were checked by name) and a constraint
// violation.
type notNullError struct{}

func (notNullError) Error() string { return "NOT NULL constraint violated" }

func (notNullError) Is(target error) bool {
	return target == ErrInvalidArgument || target == ErrConstraintViolation
}

var errNotNull error = notNullError{}

// constraint is one compiled CHECK constraint or invariant.
type constraint struct {
	kind, name, expr string
	// holds is the expression, bound: a row satisfies the constraint only
	// when it is TRUE. Spark (delta-spark 4.4) refuses a row whose CHECK
	// expression is FALSE or NULL (INSERT of a null id into a table with
	// CHECK (id > 0) fails with DELTA_VIOLATE_CONSTRAINT_WITH_VALUES).
	holds *bind.Pred
	cols  []*bind.BoundCol
}

// tableConstraints returns the CHECK constraints (sorted by name) and the
// invariants of metadata m with schema sch. A constraint deltakit cannot
// parse or bind is an error wrapping ErrUnsupportedConstraint naming it.
func tableConstraints(m *txlog.Metadata, sch *schema.StructType) ([]*constraint, error) {
	var out []*constraint
	compile := func(kind, name, expr string) error {
		e, err := ParsePredicate(expr, sch)
		var p *bind.Pred
		if err == nil {
			p, err = bind.NewBinder(sch, nil, "").Bind(e, false)
		}
		if err != nil {
			return fmt.Errorf("%w: %s %s (%s) cannot be evaluated by deltakit: %v", ErrUnsupportedConstraint, kind, name, expr, err)
		}
		c := &constraint{kind: kind, name: name, expr: expr, holds: p}
		seen := map[*bind.BoundCol]bool{}
		p.Columns(func(b *bind.BoundCol) {
			if !seen[b] {
				seen[b] = true
				c.cols = append(c.cols, b)
			}
		})
		out = append(out, c)
		return nil
	}
	if m != nil {
		for _, k := range slices.Sorted(maps.Keys(m.Configuration)) {
			if name, ok := strings.CutPrefix(k, "delta.constraints."); ok {
				if err := compile("CHECK constraint", name, m.Configuration[k]); err != nil {
					return nil, err
				}
			}
		}
	}
	var walk func(st *schema.StructType, path string) error
	walk = func(st *schema.StructType, path string) error {
		for _, f := range st.Fields {
			name := path + f.Name
			if raw, ok := f.Metadata["delta.invariants"]; ok {
				expr, err := invariantExpression(raw)
				if err != nil {
					return fmt.Errorf("%w: invariant on %s: %v", ErrUnsupportedConstraint, name, err)
				}
				if err := compile("invariant", name, expr); err != nil {
					return err
				}
			}
			if sub, ok := f.Type.(*schema.StructType); ok {
				if err := walk(sub, name+"."); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(sch, ""); err != nil {
		return nil, err
	}
	return out, nil
}

// invariantExpression returns the SQL of a delta.invariants field metadata
// value: the JSON string {"expression": {"expression": "<sql>"}}.
func invariantExpression(raw any) (string, error) {
	s, ok := raw.(string)
	if !ok {
		b, err := json.Marshal(raw)
		if err != nil {
			return "", err
		}
		s = string(b)
	}
	var v struct {
		Expression struct {
			Expression string `json:"expression"`
		} `json:"expression"`
	}
	if err := json.Unmarshal([]byte(s), &v); err != nil || v.Expression.Expression == "" {
		return "", fmt.Errorf("delta.invariants %q is not {\"expression\": {\"expression\": ...}}", s)
	}
	return v.Expression.Expression, nil
}

// hasConstraints reports whether metadata m declares CHECK constraints or
// SQL invariants, which checkConstraints evaluates.
func hasConstraints(m *Metadata) bool {
	if m == nil {
		return false
	}
	for k := range m.Configuration {
		if strings.HasPrefix(k, "delta.constraints.") {
			return true
		}
	}
	return strings.Contains(m.SchemaString, "delta.invariants")
}

// checkConstraints checks rows, full-width rows of sch in the parquetio
// value model, against the CHECK constraints (delta.constraints.<name>) and
// SQL invariants (delta.invariants) of metadata m, as every write does
// before it writes any data file; sch is m's schema when nil. A row
// violates a constraint when its expression is not TRUE: FALSE, or NULL
// (as Spark decides: a null id violates CHECK (id > 0)). It returns nil when every row passes, a
// *ConstraintViolationError (ErrConstraintViolation) naming the constraint,
// its expression and the first violating row and its values, or an error
// wrapping ErrUnsupportedConstraint when a constraint cannot be evaluated.
// NOT NULL columns are checked with the rows' other values by the write.
func checkConstraints(m *Metadata, sch *schema.StructType, rows []Row) error {
	if !hasConstraints(m) {
		return nil
	}
	if sch == nil {
		var err error
		if sch, err = m.Schema(); err != nil {
			return err
		}
	}
	cs, err := tableConstraints(m, sch)
	if err != nil {
		return err
	}
	for i, row := range rows {
		for _, c := range cs {
			if c.holds.MatchRow(row) {
				continue
			}
			vals := make([]string, len(c.cols))
			for j, b := range c.cols {
				vals[j] = b.Name + " => " + expr.FormatLiteral(b.Value(row))
			}
			return &ConstraintViolationError{Kind: c.kind, Name: c.name, Expression: c.expr, Row: i, Values: vals}
		}
	}
	return nil
}
