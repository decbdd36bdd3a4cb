package main

import (
	"github.com/spf13/cobra"
)

func newChangesCmd(a *app) *cobra.Command {
	var (
		from, to, limit int64
		where           string
		columns         []string
		format          string
	)
	cmd := &cobra.Command{
		Use:   "changes <table> --from N [--to M]",
		Short: "Print the change data feed of a range of versions",
		Long: `changes prints the change data feed of the table (delta.enableChangeDataFeed=true)
for versions --from to --to (both included; default: to the latest), as
Spark's table_changes does: the table's columns, then _change_type (insert,
delete, update_preimage, update_postimage), _commit_version and
_commit_timestamp. A version's changes come from its change data files
(_change_data/) when it has them, else from the files it added (inserts) and
removed (deletes); versions that change no data print nothing.

It fails when the feed was not enabled at --from or was turned off within the
range, or --from is past the latest version. --where and --columns are as for
cat (on the table's columns); --format: table, csv or jsonl; -o takes the
same names and is an alias (json is jsonl; given both, they must agree).`,
		Example: `  deltactl changes ./demo-data/orders --from 3
  deltactl changes ./demo-data/orders --from 3 --to 5 --format jsonl
  deltactl changes ./demo-data/orders --from 0 --where "id = 7" --columns id,status`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := a.rowFormat(cmd, format)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("from") {
				return usagef("--from is required")
			}
			if from < 0 {
				return usagef("--from must be >= 0, got %d", from)
			}
			if cmd.Flags().Changed("to") && to < from {
				return usagef("--to (%d) must be >= --from (%d)", to, from)
			}
			if !cmd.Flags().Changed("to") {
				to = -1
			}
			if limit < 0 {
				return usagef("--limit must be >= 0 (0: all rows), got %d", limit)
			}
			ctx := cmd.Context()
			t, err := a.openTable(ctx, args[0])
			if err != nil {
				return err
			}
			sopts, err := rowScanOptions(t, limit, where, columns)
			if err != nil {
				return err
			}
			feed, err := t.Changes(ctx, from, to, sopts...)
			if err != nil {
				return err
			}
			return printRows(newRowWriter(format, a.stdout, feed.Schema()), feed.Rows(ctx))
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "first version of the range (required)")
	cmd.Flags().Int64Var(&to, "to", -1, "last version of the range (default: the latest)")
	cmd.Flags().Int64VarP(&limit, "limit", "n", 0, "print at most this many rows (0: all)")
	cmd.Flags().StringVar(&where, "where", "", "filter on the table's columns, e.g. \"id = 7\"")
	cmd.Flags().StringSliceVar(&columns, "columns", nil, "table columns to print, comma-separated (default: all); the change columns follow")
	cmd.Flags().StringVar(&format, "format", "", "row format: table, csv or jsonl (or json; the same as -o)")
	return cmd
}
