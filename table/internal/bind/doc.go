// Package bind binds expressions (package expr) to a snapshot's schema and
// decides per row and per file whether a predicate may match.
//
// Binder resolves logical column names to the schema (column mapping
// physical names, partition columns and their partitionValues keys, the
// stats paths that type widening or collations make unusable) and turns an
// Expr into a Pred in negation normal form. Pred.MatchRow evaluates it on a
// row; Pred.MayMatch and Pred.MustMatch decide from a file's partition
// values and statistics (spec "Per-file Statistics") whether the file may
// hold, or holds only, matching rows. The scan, DML, MERGE, change-feed and
// Arrow evaluators of package table and its engines read a Pred field by
// field.
package bind
