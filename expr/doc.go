// Package expr is deltakit's expression language: the predicates of
// table.WithFilter, DELETE, UPDATE and MERGE conditions and CHECK
// constraints (Expr, built with Col, And, Or, Not), the value expressions
// of UPDATE's SET (Value: Lit, a Column, Plus, Minus, Times, Div), their
// text form (String), and the one parser of that text (Parse,
// ParseAssignments) that deltactl --where, deltactl update --set and the
// delta.constraints.* table properties use.
//
// expr also owns the value semantics the evaluators share: how a column's
// values compare (Kind, KindOf), how a Go literal becomes a column's
// canonical value (Convert), comparison with SQL's NULL and IEEE 754's NaN
// rules (Compare, CompareTrue, Op.Holds), and what a file's statistics say
// about a comparison (ParseStats, Stats.Bounds, Bounds.MayCompare, MayIn,
// MayNull, MustCompare; spec "Per-file Statistics"). It does not read
// tables: binding an Expr to a table's schema (logical to physical names,
// partition columns, the stats paths), the row, Arrow and file-skipping
// evaluators of the bound predicate live in package table, which names the
// language's types and builders under the same names (table.Expr,
// table.Col, table.ParsePredicate, ...).
//
// # Text form
//
//	expr      = or
//	or        = and { OR and }
//	and       = not { AND not }
//	not       = NOT not | "(" expr ")" | TRUE | FALSE | predicate
//	predicate = column ( cmp ( literal | column )
//	                   | [NOT] IN "(" literal { "," literal } ")"
//	                   | [NOT] BETWEEN literal AND literal
//	                   | IS [NOT] NULL )
//	cmp       = "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
//	column    = name { "." name }      (a name may be `back-quoted` or "double-quoted")
//	literal   = number | 'string' | TRUE | FALSE | DATE 'yyyy-mm-dd'
//	          | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff]' | X'hex bytes'
//
//	set       = assign { "," assign }  (ParseAssignments)
//	assign    = column "=" value
//	value     = term { ("+" | "-") term }
//	term      = factor { ("*" | "/") factor }
//	factor    = literal | NULL | column | "(" value ")"
//
// Keywords are case-insensitive; a quote inside a quoted string or name is
// doubled, as in SQL. A TIMESTAMP without a zone is UTC; ISO 8601 with a
// zone is accepted too. Numbers are integers (int64) or floats; given a
// schema, a number compared with or assigned to a decimal column stays
// exact. Errors are *SyntaxError and name the 1-based position (in runes)
// and the token found there. String returns this form, and Parse reads it
// back to a predicate with the same String, except for NaN and infinite
// floats (no literal), In with no values (SQL has no empty IN list) and
// And or Or of one term (its parentheses are not kept).
//
// # NULL semantics
//
// As in SQL, a predicate is TRUE, FALSE or unknown (NULL), and a row
// matches only where it is TRUE: a comparison with a null column value is
// unknown, so a row whose column is null matches neither Col(c).Eq(v) nor
// Not(Col(c).Eq(v)); IsNull and IsNotNull test for nulls. AND is FALSE if
// any term is FALSE, OR is TRUE if any term is TRUE, NOT of unknown is
// unknown. x IN () is FALSE, also for a null x. Arithmetic with a null
// operand is null; division by zero and integer overflow are errors
// (ErrDivideByZero; Spark's ANSI mode, its default). Floating-point comparisons
// follow IEEE 754: on a NaN, =, <, <=, >, >= and IN are false and != is
// true, and NOT turns each of them around (-0.0 equals 0.0). Strings and
// binary values compare byte-wise (UTF-8 code unit order, Spark's default
// collation).
package expr
