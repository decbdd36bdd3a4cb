package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// timeTravel holds --version and --timestamp.
type timeTravel struct {
	version   int64
	timestamp string
}

func (tt *timeTravel) register(cmd *cobra.Command) {
	cmd.Flags().Int64Var(&tt.version, "version", 0, "table version to show (default: the latest)")
	cmd.Flags().StringVar(&tt.timestamp, "timestamp", "", "show the latest version committed at or before this time (RFC 3339, \"2006-01-02 15:04:05\" or \"2006-01-02\", UTC unless a zone is given)")
}

// open opens the table at uri at the version or time the flags of cmd
// name (the latest when neither is set).
func (tt *timeTravel) open(a *app, cmd *cobra.Command, uri string) (*table.Table, error) {
	opts, err := tt.options(cmd)
	if err != nil {
		return nil, err
	}
	return a.openTable(cmd.Context(), uri, opts...)
}

// atVersion gives cmd the --version and --timestamp flags and a RunE that
// opens the table its first argument names at the version they select and
// runs show on it.
func (a *app) atVersion(cmd *cobra.Command, show func(cmd *cobra.Command, t *table.Table) error) *cobra.Command {
	var tt timeTravel
	tt.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		t, err := tt.open(a, cmd, args[0])
		if err != nil {
			return err
		}
		return show(cmd, t)
	}
	return cmd
}

// options returns the table options selecting the version.
func (tt *timeTravel) options(cmd *cobra.Command) ([]table.Option, error) {
	if cmd.Flags().Changed("version") && tt.timestamp != "" {
		return nil, usagef("--version and --timestamp exclude each other")
	}
	if cmd.Flags().Changed("version") {
		if tt.version < 0 {
			return nil, usagef("--version must be >= 0")
		}
		return []table.Option{table.AtVersion(tt.version)}, nil
	}
	if tt.timestamp != "" {
		t, err := parseTime(tt.timestamp)
		if err != nil {
			return nil, usagef("--timestamp: %v", err)
		}
		return []table.Option{table.AtTimestamp(t)}, nil
	}
	return nil, nil
}

// parseTime parses the time formats deltactl accepts.
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot parse time %q", s)
}

func newHistoryCmd(a *app) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "history <table>",
		Short: "List the table's commits, newest first",
		Long: `history lists the table's commits, newest first: version, timestamp,
commitInfo.timestamp, operation, operation parameters and metrics (from each
commit's commitInfo).

TIMESTAMP is the time --timestamp time travel uses, as in Spark's DESCRIBE
HISTORY: the commit file's modification time, made monotonic over the
versions (at least 1 ms after the previous commit), or the in-commit
timestamp where the table has them; "snapshot --timestamp T" with a time T
printed here loads that version. COMMITINFO.TIMESTAMP is the writer's clock
recorded in the commit. Commits removed by log cleanup are not listed; a
note says where the log starts.

A commit file that cannot be read or decoded (truncated, garbage) is listed
in place with its file and the reason, as is a table that cannot be loaded
(a corrupt commit or checkpoint): the readable commits are shown, and the
command exits 1 at the end.`,
		Example: "  deltactl history ./demo-data/flights --limit 5\n  deltactl history -o json s3://bucket/tables/t1",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usagef("--limit must be >= 0")
			}
			return a.history(cmd.Context(), args[0], limit)
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 0, "show at most this many commits (0: all)")
	return cmd
}

// history prints the history of the table at uri, newest first, at most
// limit commits (0: all). It reads the log without needing the table to
// load: when a snapshot cannot be built (a corrupt commit or checkpoint,
// table.ErrCorruptLog) or a commit cannot be decoded, the readable commits
// are printed, the unreadable ones in place with the reason, and the error
// returned at the end says what was unreadable.
func (a *app) history(ctx context.Context, uri string, limit int) error {
	var loadErr error
	if _, err := a.openTable(ctx, uri); err != nil {
		if !errors.Is(err, table.ErrCorruptLog) {
			return err
		}
		loadErr = err
	}
	store, err := a.openStore(ctx, uri)
	if err != nil {
		return err
	}
	h, err := table.LogHistory(ctx, store, limit)
	if err != nil {
		return err
	}
	oldest, err := table.OldestCommitOf(ctx, store)
	if err != nil {
		return err
	}
	v := historyView(store.URI(), h, oldest)
	if loadErr != nil {
		v.LoadError = loadErr.Error()
	}
	if err := a.out().History(v); err != nil {
		return err
	}
	var bad []string
	for _, e := range h {
		if e.Err != nil {
			bad = append(bad, strconv.FormatInt(e.Version, 10))
		}
	}
	switch {
	case len(bad) > 0 && loadErr != nil:
		return fmt.Errorf("history %s: commit(s) %s cannot be read, and the table cannot be loaded (see above)", store.URI(), strings.Join(bad, ", "))
	case len(bad) > 0:
		return fmt.Errorf("history %s: commit(s) %s cannot be read (see above)", store.URI(), strings.Join(bad, ", "))
	case loadErr != nil:
		return fmt.Errorf("history %s: the table cannot be loaded: %w", store.URI(), loadErr)
	}
	return nil
}

func newLogCmd(a *app) *cobra.Command {
	var ver int64
	cmd := &cobra.Command{
		Use:   "log <table>",
		Short: "Print the actions of one commit as JSON",
		Long: `log prints the actions of one commit file (the latest unless --version is
given) as pretty-printed JSON, one action per object, in file order.

A commit file that cannot be decoded is reported with its file and the
reason (exit 1). When the table cannot be loaded (a corrupt commit or
checkpoint), log without --version shows the latest commit file, with a
note saying why the table cannot be loaded, and exits 1.`,
		Example: "  deltactl log ./demo-data/flights --version 0",
		Args:    exactArgs(1),
		RunE: a.onStore(func(cmd *cobra.Command, store table.Store) error {
			err := a.logCommit(cmd, store, ver)
			if err != nil && !isUsageError(err) {
				// As snapshot's "table: open <uri>: ..." errors do, name the table.
				err = fmt.Errorf("log %s: %w", store.URI(), err)
			}
			return err
		}),
	}
	cmd.Flags().Int64Var(&ver, "version", 0, "commit version (default: the latest)")
	return cmd
}

// logCommit prints the actions of commit ver of the table in store (the
// latest when --version is not given).
func (a *app) logCommit(cmd *cobra.Command, store table.Store, ver int64) error {
	ctx := cmd.Context()
	latest := !cmd.Flags().Changed("version")
	var loadErr error
	if latest {
		snap, err := table.LoadSnapshot(ctx, store, -1, table.WithLogger(a.logger))
		switch {
		case errors.Is(err, table.ErrCorruptLog):
			// No snapshot past a corrupt log file: show the latest
			// commit file (or why it is unreadable) and fail at the end.
			h, herr := table.LogHistory(ctx, store, 1)
			if herr != nil || len(h) == 0 {
				return err
			}
			ver, loadErr = h[0].Version, err
		case err != nil:
			return err
		default:
			ver = snap.Version()
		}
	} else if ver < 0 {
		return usagef("--version must be >= 0")
	}
	v := &LogView{Table: store.URI(), Version: ver, Actions: []json.RawMessage{}}
	actions, err := table.ReadCommit(ctx, store, ver)
	if errors.Is(err, table.ErrNotExist) {
		if latest {
			// The latest version loaded, so a checkpoint holds it
			// and cleanup removed its commit file: say so, exit 0.
			v.Cleaned = true
			v.Note = fmt.Sprintf("commit %d was removed by log cleanup; the version is held by its checkpoint (deltactl snapshot describes it)", ver)
			return a.out().Log(v)
		}
		err = a.commitNotFound(ctx, store, ver, err)
	}
	if err != nil {
		return err
	}
	for i := range actions {
		raw, err := json.Marshal(&actions[i])
		if err != nil {
			return err
		}
		v.Actions = append(v.Actions, raw)
	}
	if loadErr != nil {
		v.Note = "the table cannot be loaded: " + loadErr.Error()
	}
	if err := a.out().Log(v); err != nil {
		return err
	}
	if loadErr != nil {
		return fmt.Errorf("commit %d is the latest commit file, but the table cannot be loaded: %w", ver, loadErr)
	}
	return nil
}

// commitNotFound explains why commit ver, which ReadCommit did not find
// (notExist), cannot be shown: a *table.VersionNotFoundError naming the
// earliest and latest versions, as snapshot --version gives, or a note that
// log cleanup removed the commit of a version a checkpoint still holds.
func (a *app) commitNotFound(ctx context.Context, store table.Store, ver int64, notExist error) error {
	_, err := table.LoadSnapshot(ctx, store, ver, table.WithLogger(a.logger))
	if err != nil {
		return err
	}
	return fmt.Errorf("commit %d is no longer in the log (removed by log cleanup; the version is still reconstructable from a checkpoint): %w", ver, notExist)
}

func newSnapshotCmd(a *app) *cobra.Command {
	return a.atVersion(&cobra.Command{
		Use:   "snapshot <table>",
		Short: "Describe the table at one version",
		Long: `snapshot describes the table at its latest version (or --version N, or
--timestamp T): protocol and table features, metadata id, name and
description, schema, partition columns, properties, and the number of live
files, their bytes and rows (from the files' stats).`,
		Example: "  deltactl snapshot ./demo-data/flights\n  deltactl snapshot ./demo-data/flights --version 3 -o json",
		Args:    exactArgs(1),
	}, func(cmd *cobra.Command, t *table.Table) error {
		return a.out().Snapshot(snapshotView(t.URI(), t.Snapshot()))
	})
}

func newFilesCmd(a *app) *cobra.Command {
	var where string
	cmd := a.atVersion(&cobra.Command{
		Use:   "files <table>",
		Short: "List the live data files with partition values, size, rows and min/max",
		Long: `files lists the live data files of the table (latest version, or --version
/ --timestamp): path, partition values, size in bytes, rows and the min/max
statistics per column. With --where, only the files a scan with that filter
would read (after partition pruning and stats-based skipping).`,
		Example: "  deltactl files ./demo-data/weather --where \"weather = 'sun'\"",
		Args:    exactArgs(1),
	}, func(cmd *cobra.Command, t *table.Table) error {
		var sopts []table.ScanOption
		if where != "" {
			e, err := parseWhere(where, t.Schema())
			if err != nil {
				return usagef("--where: %v", err)
			}
			sopts = append(sopts, table.WithFilter(e))
		}
		files, err := t.Files(cmd.Context(), sopts...)
		if err != nil {
			return err
		}
		v := &FilesView{Table: t.URI(), Version: t.Version(), Files: []FileView{}}
		for _, f := range files {
			v.Files = append(v.Files, fileView(f, t.PartitionColumns()))
		}
		return a.out().Files(v)
	})
	cmd.Flags().StringVar(&where, "where", "", "only files that may hold rows matching this filter (see 'deltactl cat --help')")
	return cmd
}

func newSchemaCmd(a *app) *cobra.Command {
	return a.atVersion(&cobra.Command{
		Use:   "schema <table>",
		Short: "Print the table schema",
		Long: `schema prints the table schema as a tree (as Spark's printSchema), or with
-o json the top-level fields and the Delta schema JSON.`,
		Args: exactArgs(1),
	}, func(cmd *cobra.Command, t *table.Table) error {
		st := t.Schema()
		raw, err := schema.Marshal(st)
		if err != nil {
			return err
		}
		return a.out().Schema(&SchemaView{Table: t.URI(), Version: t.Version(), Fields: fieldViews(st), Schema: json.RawMessage(raw), st: st})
	})
}

func newTxnCmd(a *app) *cobra.Command {
	return a.atVersion(&cobra.Command{
		Use:   "txn <table>",
		Short: "List the application transaction ids (txn actions) and their versions",
		Long: `txn lists the table's txn actions: for each application id (a streaming
query id) the latest version (epoch) it committed and when.`,
		Args: exactArgs(1),
	}, func(cmd *cobra.Command, t *table.Table) error {
		return a.out().Txns(txnsView(t.URI(), t.Snapshot()))
	})
}
