package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// DMLView is the output of delete, update and restore.
type DMLView struct {
	Table     string `json:"table"`
	Operation string `json:"operation"`
	// Version is the table version after the operation; Committed is false
	// when nothing matched (no commit was made).
	Version                int64             `json:"version"`
	Committed              bool              `json:"committed"`
	DeletedRows            int64             `json:"deletedRows,omitempty"`
	UpdatedRows            int64             `json:"updatedRows,omitempty"`
	CopiedRows             int64             `json:"copiedRows"`
	FilesAdded             int               `json:"filesAdded"`
	FilesRemoved           int               `json:"filesRemoved"`
	DeletionVectorsAdded   int               `json:"deletionVectorsAdded"`
	DeletionVectorsUpdated int               `json:"deletionVectorsUpdated"`
	DeletionVectorsRemoved int               `json:"deletionVectorsRemoved"`
	Metrics                map[string]string `json:"operationMetrics,omitempty"`
}

func dmlView(t *table.Table, op string, res *table.DMLResult) *DMLView {
	return &DMLView{Table: t.URI(), Operation: op, Version: res.Version, Committed: res.Committed,
		DeletedRows: res.DeletedRows, UpdatedRows: res.UpdatedRows, CopiedRows: res.CopiedRows,
		FilesAdded: res.AddedFiles, FilesRemoved: res.RemovedFiles,
		DeletionVectorsAdded: res.DeletionVectorsAdded, DeletionVectorsUpdated: res.DeletionVectorsUpdated,
		DeletionVectorsRemoved: res.DeletionVectorsRemoved, Metrics: res.Metrics}
}

func (o *jsonOutput) DML(v *DMLView) error { return o.write(v) }

func (o *textOutput) DML(v *DMLView) error {
	if !v.Committed {
		_, err := fmt.Fprintf(o.w, "%s %s: nothing to change at version %d; no commit made\n", v.Operation, v.Table, v.Version)
		return err
	}
	var what string
	switch v.Operation {
	case "delete":
		what = fmt.Sprintf("%d row(s) deleted", v.DeletedRows)
	case "update":
		what = fmt.Sprintf("%d row(s) updated", v.UpdatedRows)
	default:
		what = fmt.Sprintf("%d file(s) restored, %d removed", v.FilesAdded, v.FilesRemoved)
	}
	_, err := fmt.Fprintf(o.w, "%s %s: version %d, %s; %d file(s) added, %d removed, %d row(s) copied, deletion vectors %d added, %d updated, %d removed\n",
		v.Operation, v.Table, v.Version, what, v.FilesAdded, v.FilesRemoved, v.CopiedRows,
		v.DeletionVectorsAdded, v.DeletionVectorsUpdated, v.DeletionVectorsRemoved)
	return err
}

func newDeleteCmd(a *app) *cobra.Command {
	var where string
	var all bool
	var retries int
	cmd := &cobra.Command{
		Use:   "delete <table> --where '<predicate>'",
		Short: "Delete the rows that match a predicate (DELETE)",
		Long: `delete removes the rows where the --where predicate is true (a row where it
is null stays), in one DELETE commit. Files the predicate cannot match are not
read; files it matches as a whole are removed unread. On a table with deletion
vectors (delta.enableDeletionVectors=true) the other touched files get a
deletion vector; otherwise they are rewritten without the deleted rows.
When no row matches, nothing is committed. --all deletes every row.

The predicate syntax is that of cat --where.`,
		Example: "  deltactl delete ./demo-data/flights --where \"origin = 'SFO' AND delay > 300\"",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (where == "") == !all {
				return usagef("give exactly one of --where '<predicate>' and --all")
			}
			return a.commitDML(cmd.Context(), args[0], "delete", func(t *table.Table) (*table.Table, *table.DMLResult, error) {
				pred, err := dmlWhere(where, t)
				if err != nil {
					return nil, nil, err
				}
				return t.Delete(cmd.Context(), pred, table.WithConflictRetries(retries))
			})
		},
	}
	cmd.Flags().StringVar(&where, "where", "", "predicate of the rows to delete")
	cmd.Flags().BoolVar(&all, "all", false, "delete every row")
	cmd.Flags().IntVar(&retries, "retries", 0, retriesUsage)
	return cmd
}

func newUpdateCmd(a *app) *cobra.Command {
	var where string
	var sets []string
	var retries int
	cmd := &cobra.Command{
		Use:   "update <table> --set 'col = expr' [--where '<predicate>']",
		Short: "Set columns of the rows that match a predicate (UPDATE)",
		Long: `update sets columns of the rows where --where is true (every row without
--where), in one UPDATE commit. Each --set is 'column = value', where value is
a literal ('text', 12, 1.5, TRUE, DATE '2024-01-02', NULL), another column, or
arithmetic of them with + - * / and parentheses; several assignments may be
given in one --set separated by commas or in several --set flags. Values see
the row before the update. Updated rows go into new files; the old copies are
removed by deletion vectors or by rewriting, as for delete.`,
		Example: "  deltactl update ./demo-data/flights --set 'delay = delay - 5' --where \"origin = 'SFO'\"",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(sets) == 0 {
				return usagef("--set 'column = value' is required")
			}
			return a.commitDML(cmd.Context(), args[0], "update", func(t *table.Table) (*table.Table, *table.DMLResult, error) {
				set, err := parseSets(sets, t.Schema())
				if err != nil {
					return nil, nil, err
				}
				pred, err := dmlWhere(where, t)
				if err != nil {
					return nil, nil, err
				}
				return t.Update(cmd.Context(), pred, set, table.WithConflictRetries(retries))
			})
		},
	}
	cmd.Flags().StringVar(&where, "where", "", "predicate of the rows to update (default: every row)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "assignment 'column = value' (repeatable)")
	cmd.Flags().IntVar(&retries, "retries", 0, retriesUsage)
	return cmd
}

func newRestoreCmd(a *app) *cobra.Command {
	var version int64
	var ts string
	cmd := &cobra.Command{
		Use:   "restore <table> --version N | --timestamp T",
		Short: "Return the table's data to an earlier version (RESTORE)",
		Long: `restore commits one RESTORE that makes the table hold the files (and the
metadata) of an earlier version: files live now but not then are removed,
files live then but not now are added back. Later versions stay in the
history. It fails, naming the file, when a file of that version was vacuumed.
--timestamp takes RFC 3339 (2024-01-02T03:04:05Z) or a date (2024-01-02).`,
		Example: "  deltactl restore ./demo-data/flights --version 3",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			vset, tset := cmd.Flags().Changed("version"), cmd.Flags().Changed("timestamp")
			if vset == tset {
				return usagef("give exactly one of --version and --timestamp")
			}
			to := table.ToVersion(version)
			if tset {
				at, err := parseRestoreTime(ts)
				if err != nil {
					return usagef("--timestamp: %v", err)
				}
				to = table.ToTimestamp(at)
			}
			return a.commitDML(cmd.Context(), args[0], "restore", func(t *table.Table) (*table.Table, *table.DMLResult, error) {
				return t.Restore(cmd.Context(), to)
			})
		},
	}
	cmd.Flags().Int64Var(&version, "version", 0, "version to restore")
	cmd.Flags().StringVar(&ts, "timestamp", "", "restore the latest version at or before this time")
	return cmd
}

func parseRestoreTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339 nor YYYY-MM-DD", s)
}

// commitDML opens the table at uri, commits op on it (DELETE, UPDATE,
// RESTORE) and prints op's result under the command name.
func (a *app) commitDML(ctx context.Context, uri, name string, op func(t *table.Table) (*table.Table, *table.DMLResult, error)) error {
	t, err := a.openTable(ctx, uri)
	if err != nil {
		return err
	}
	_, res, err := op(t)
	if err != nil {
		return err
	}
	return a.out().DML(dmlView(t, name, res))
}

// parseSets parses the --set assignments of update against sch; a column
// set twice is a usage error.
func parseSets(sets []string, sch *schema.StructType) (map[string]table.Value, error) {
	set := map[string]table.Value{}
	for _, s := range sets {
		m, err := table.ParseAssignments(s, sch)
		if err != nil {
			return nil, usagef("--set: %v", err)
		}
		for k, v := range m {
			if _, dup := set[k]; dup {
				return nil, usagef("--set: column %s is set twice", k)
			}
			set[k] = v
		}
	}
	return set, nil
}

// dmlWhere parses --where of delete and update against t's schema; "" is
// nil (every row).
func dmlWhere(where string, t *table.Table) (table.Expr, error) {
	if where == "" {
		return nil, nil
	}
	pred, err := parseWhere(where, t.Schema())
	if err != nil {
		return nil, usagef("--where: %v", err)
	}
	return pred, nil
}

// retriesUsage is the help of delete's, update's and merge's --retries.
const retriesUsage = "re-plan on the latest version and retry up to N times when a concurrent commit conflicts (table.WithConflictRetries)"
