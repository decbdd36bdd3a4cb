package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deltakit/deltakit/table"
)

// AlterView is the output of the alter subcommands.
type AlterView struct {
	Table string `json:"table"`
	// Operation is Spark's: "RENAME COLUMN", "DROP COLUMNS",
	// "SET TBLPROPERTIES", "UNSET TBLPROPERTIES".
	Operation string `json:"operation"`
	Version   int64  `json:"version"` // the table version committed
	// Columns are the logical column names after the change.
	Columns []string `json:"columns"`
	// Properties are the table properties after a property change
	// (set-properties and unset-properties only).
	Properties map[string]string `json:"properties,omitempty"`
	// Protocol is the table's protocol after a property change, as
	// "(reader,writer)" and, at writer version 7, its writer features.
	Protocol string `json:"protocol,omitempty"`
}

func alterView(t *table.Table, op string) *AlterView {
	v := &AlterView{Table: t.URI(), Operation: op, Version: t.Version(), Columns: []string{}}
	for _, f := range t.Schema().Fields {
		v.Columns = append(v.Columns, f.Name)
	}
	return v
}

// propertiesView is alterView of a property change: the properties and
// protocol after it.
func propertiesView(t *table.Table, op string) *AlterView {
	v := alterView(t, op)
	v.Properties = maps.Clone(t.Snapshot().Metadata().Configuration)
	if v.Properties == nil {
		v.Properties = map[string]string{}
	}
	p := t.Snapshot().Protocol()
	v.Protocol = fmt.Sprintf("(%d,%d)", p.MinReaderVersion, p.MinWriterVersion)
	if p.MinWriterVersion >= 7 && len(p.WriterFeatures) > 0 {
		v.Protocol += " " + strings.Join(p.WriterFeatures, ", ")
	}
	return v
}

func (o *jsonOutput) Alter(v *AlterView) error { return o.write(v) }

func (o *textOutput) Alter(v *AlterView) error {
	if v.Protocol != "" {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(v.Properties)) {
			kv = append(kv, k+"="+v.Properties[k])
		}
		props := strings.Join(kv, ", ")
		if props == "" {
			props = "(none)"
		}
		_, err := fmt.Fprintf(o.w, "%s %s: version %d; properties now %s; protocol %s\n",
			v.Operation, v.Table, v.Version, props, v.Protocol)
		return err
	}
	_, err := fmt.Fprintf(o.w, "%s %s: version %d; columns now %s\n", v.Operation, v.Table, v.Version, strings.Join(v.Columns, ", "))
	return err
}

func newAlterCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alter",
		Short: "Rename or drop columns, set or unset table properties",
		Long: `alter changes a table's schema or properties without rewriting data files.
rename-column and drop-column commit a new schema only (Spark's ALTER TABLE
RENAME COLUMN and DROP COLUMNS). Both need column mapping (create the table with
--property delta.columnMapping.mode=name or id, or enable it later with
set-properties <table> delta.columnMapping.mode=name); a dotted path (a.b) names a
field of a struct column. Partition columns cannot be dropped; columns a CHECK
constraint uses cannot be renamed or dropped.
set-properties and unset-properties commit new table properties only (Spark's
ALTER TABLE SET TBLPROPERTIES and UNSET TBLPROPERTIES). A property that turns on
a table feature (delta.enableChangeDataFeed, delta.enableDeletionVectors,
delta.enableInCommitTimestamps, ...) upgrades the protocol in the same commit;
a feature deltakit cannot write is refused by name, and nothing is committed.
delta.columnMapping.mode=name on a table without column mapping enables it as
Spark does: every column keeps its name as physical name (no data file is
rewritten); other mode changes (none to id, back to none) are refused.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "rename-column <table> <column> <new-name>",
		Short:   "Rename a column (RENAME COLUMN)",
		Example: "  deltactl alter rename-column ./t delay delay_minutes",
		Args:    exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.commitAlter(cmd.Context(), args[0], alterView, table.RenameColumnOperation, func(ctx context.Context, t *table.Table) (*table.Table, error) {
				return t.RenameColumn(ctx, args[1], args[2])
			})
		},
	}, &cobra.Command{
		Use:     "drop-column <table> <column>...",
		Short:   "Drop columns (DROP COLUMNS)",
		Example: "  deltactl alter drop-column ./t notes",
		Args:    tableAndSome("column"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.commitAlter(cmd.Context(), args[0], alterView, table.DropColumnsOperation, func(ctx context.Context, t *table.Table) (*table.Table, error) {
				return t.DropColumn(ctx, args[1:]...)
			})
		},
	}, &cobra.Command{
		Use:     "set-properties <table> <key=value>...",
		Short:   "Set table properties (SET TBLPROPERTIES)",
		Example: "  deltactl alter set-properties ./t delta.enableChangeDataFeed=true delta.checkpointInterval=20",
		Args:    tableAndSome("key=value"),
		RunE: func(cmd *cobra.Command, args []string) error {
			props := map[string]string{}
			for _, kv := range args[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("property %q: want key=value", kv)
				}
				if _, dup := props[k]; dup {
					return usagef("property %s given twice", k)
				}
				props[k] = v
			}
			return a.commitAlter(cmd.Context(), args[0], propertiesView, table.SetPropertiesOperation, func(ctx context.Context, t *table.Table) (*table.Table, error) {
				return t.SetProperties(ctx, props)
			})
		},
	})
	unset := &cobra.Command{
		Use:     "unset-properties <table> <key>...",
		Short:   "Unset table properties (UNSET TBLPROPERTIES)",
		Example: "  deltactl alter unset-properties ./t delta.checkpointInterval",
		Args:    tableAndSome("key"),
	}
	ifExists := unset.Flags().Bool("if-exists", false, "a key the table does not have is no error (UNSET TBLPROPERTIES IF EXISTS)")
	unset.RunE = func(cmd *cobra.Command, args []string) error {
		for _, k := range args[1:] {
			if k == "" || strings.Contains(k, "=") {
				return usagef("property key %q: want a key without a value", k)
			}
		}
		return a.commitAlter(cmd.Context(), args[0], propertiesView, table.UnsetPropertiesOperation, func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return t.UnsetProperties(ctx, *ifExists, args[1:]...)
		})
	}
	cmd.AddCommand(unset)
	return cmd
}

// tableAndSome accepts the table and at least one more argument (what
// names it in the usage error).
func tableAndSome(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < 2 {
			return usagef("give the table and at least one %s", what)
		}
		return nil
	}
}

// commitAlter opens the table at uri, commits change on it and prints
// view of the table after it under the operation name op.
func (a *app) commitAlter(ctx context.Context, uri string, view func(*table.Table, string) *AlterView, op string, change func(context.Context, *table.Table) (*table.Table, error)) error {
	t, err := a.openTable(ctx, uri)
	if err != nil {
		return err
	}
	nt, err := change(ctx, t)
	if err != nil {
		return err
	}
	return a.out().Alter(view(nt, op))
}
