package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deltakit/deltakit/table"
)

// AlterView is the output of alter rename-column and alter drop-column.
type AlterView struct {
	Table     string `json:"table"`
	Operation string `json:"operation"` // Spark's: "RENAME COLUMN", "DROP COLUMNS"
	Version   int64  `json:"version"`   // the table version committed
	// Columns are the logical column names after the change.
	Columns []string `json:"columns"`
}

func alterView(t *table.Table, op string) *AlterView {
	v := &AlterView{Table: t.URI(), Operation: op, Version: t.Version(), Columns: []string{}}
	for _, f := range t.Schema().Fields {
		v.Columns = append(v.Columns, f.Name)
	}
	return v
}

func (o *jsonOutput) Alter(v *AlterView) error { return o.write(v) }

func (o *textOutput) Alter(v *AlterView) error {
	_, err := fmt.Fprintf(o.w, "%s %s: version %d; columns now %s\n", v.Operation, v.Table, v.Version, strings.Join(v.Columns, ", "))
	return err
}

func newAlterCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alter",
		Short: "Rename or drop columns of a table with column mapping",
		Long: `alter changes a table's schema without rewriting data files: rename-column
and drop-column commit a new schema only (Spark's ALTER TABLE RENAME COLUMN and
DROP COLUMNS). Both need column mapping (create the table with
--property delta.columnMapping.mode=name or id); a dotted path (a.b) names a
field of a struct column. Partition columns cannot be dropped; columns a CHECK
constraint uses cannot be renamed or dropped.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "rename-column <table> <column> <new-name>",
		Short:   "Rename a column (RENAME COLUMN)",
		Example: "  deltactl alter rename-column ./t delay delay_minutes",
		Args:    exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			nt, err := table.RenameColumn(cmd.Context(), t, args[1], args[2])
			if err != nil {
				return err
			}
			return a.out().Alter(alterView(nt, table.RenameColumnOperation))
		},
	}, &cobra.Command{
		Use:     "drop-column <table> <column>...",
		Short:   "Drop columns (DROP COLUMNS)",
		Example: "  deltactl alter drop-column ./t notes",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("give the table and at least one column")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			nt, err := table.DropColumn(cmd.Context(), t, args[1:]...)
			if err != nil {
				return err
			}
			return a.out().Alter(alterView(nt, table.DropColumnsOperation))
		},
	})
	return cmd
}
