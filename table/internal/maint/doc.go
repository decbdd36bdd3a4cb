// Package maint is table maintenance that reads the log and the data files
// without committing: the consistency checks (Verify, VerifyExactlyOnce)
// and data file cleanup (Vacuum: which files are unreferenced, expired and
// safe to delete, and the deletes). It works on the log through txlog,
// including txlog's log-name parsing (txlog.ParseLogKey).
//
// The package table is its API (table.Verify, table.VerifyExactlyOnce,
// (*table.Table).Vacuum, and aliases of the types here); Optimize stays in
// table, as it writes through table's one commit path.
package maint
