package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/deltakit/deltakit/table"
)

func newCheckpointCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "checkpoint <table>",
		Short: "Write a checkpoint of the latest version",
		Long: `checkpoint writes a classic checkpoint of the table's latest version
(_delta_log/<version>.checkpoint.parquet) and updates _last_checkpoint, so
that readers replay from it instead of every commit.`,
		Args: exactArgs(1),
		RunE: a.onTable(func(cmd *cobra.Command, t *table.Table) error {
			if err := t.Checkpoint(cmd.Context()); err != nil {
				return err
			}
			return a.out().Checkpoint(&CheckpointView{Table: t.URI(), Version: t.Version(), Path: table.CheckpointKey(t.Version())})
		}),
	}
}

// parseRetention parses a Go duration ("168h") or a number of days ("7d").
func parseRetention(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err == nil && n >= 0 {
			return time.Duration(n * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad retention %q: want a duration such as 168h or 7d", s)
	}
	return d, nil
}

func newVacuumCmd(a *app) *cobra.Command {
	var (
		retain string
		dryRun bool
		force  bool
	)
	cmd := &cobra.Command{
		Use:   "vacuum <table>",
		Short: "Delete data files the table no longer references",
		Long: `vacuum deletes data files under the table root that the latest version does
not reference and that were removed (by their remove action's time) or, for
files the log never referenced (orphans of failed writes), written longer
ago than the retention. It never deletes a file the latest snapshot
references and never touches _delta_log/ or other hidden directories.

The retention defaults to the table's delta.deletedFileRetentionDuration
(7 days when unset); a shorter --retain is refused unless --force, because
readers of older versions and writers in flight may still need the files.
--dry-run lists what would be deleted and deletes nothing.`,
		Example: "  deltactl vacuum ./demo-data/flights --dry-run\n  deltactl vacuum ./t1 --retain 0h --force",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var vopts []table.VacuumOption
			if retain != "" {
				d, err := parseRetention(retain)
				if err != nil {
					return usagef("--retain: %v", err)
				}
				vopts = append(vopts, table.WithVacuumRetention(d))
			}
			t, err := a.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			bar := a.lateProgress("vacuum", "")
			if !dryRun {
				vopts = append(vopts, table.WithVacuumProgress(bar.setInt))
			}
			vopts = append(vopts, table.WithVacuumDryRun(dryRun), table.WithVacuumForce(force))
			res, err := t.Vacuum(cmd.Context(), vopts...)
			bar.Finish()
			if errors.Is(err, table.ErrRetentionTooShort) {
				return fmt.Errorf("%w; pass --force to vacuum with --retain %s anyway (only when no reader or writer still needs the older files)", err, retain)
			}
			if err != nil {
				return err
			}
			return a.out().Vacuum(vacuumView(t.URI(), res))
		},
	}
	cmd.Flags().StringVar(&retain, "retain", "", "retention, e.g. 168h or 7d (default: the table's delta.deletedFileRetentionDuration)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the files that would be deleted; delete nothing")
	cmd.Flags().BoolVar(&force, "force", false, "allow a retention below delta.deletedFileRetentionDuration")
	return cmd
}

// parseSize parses a size with go-humanize: "128MB", "64MiB", "1g",
// "512 KB", "1.5GiB", "1048576". K, M, G, T, P and E with or without B are
// binary multiples here, as in Spark's and Hadoop's size settings (128MB is
// 128 MiB); humanize alone would read them as powers of 1000.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, unicode.IsLetter)
	unit := strings.ToLower(t[len(num):])
	if len(unit) == 1 && unit != "b" || len(unit) == 2 && unit[1] == 'b' {
		unit = unit[:1] + "ib" // "m", "mb" -> "mib"
	}
	n, err := humanize.ParseBytes(strings.TrimSpace(num) + unit)
	if err != nil || n == 0 || n > math.MaxInt64 {
		return 0, fmt.Errorf("bad size %q: want e.g. 128MB", s)
	}
	return int64(n), nil
}

// parseTargetSize parses the --target-size flag of ingest, ingest kafka
// and optimize (parseSize); a bad size is a usage error.
func parseTargetSize(s string) (int64, error) {
	n, err := parseSize(s)
	if err != nil {
		return 0, usagef("--target-size: %v", err)
	}
	return n, nil
}

func newOptimizeCmd(a *app) *cobra.Command {
	var target string
	cmd := &cobra.Command{
		Use:   "optimize <table>",
		Short: "Compact small files (bin-packing per partition)",
		Long: `optimize compacts small data files: in each partition the files smaller than
the target size are packed into bins of about the target size and each bin
is rewritten as one file. One OPTIMIZE commit removes the old files and adds
the new ones with dataChange=false; the rows do not change. The old files
stay on storage until vacuum deletes them after the retention.`,
		Example: "  deltactl optimize ./demo-data/flights --target-size 64MB",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			size, err := parseTargetSize(target)
			if err != nil {
				return err
			}
			t, err := a.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			bar := a.lateProgress("optimize", "")
			_, res, err := t.Optimize(cmd.Context(), table.WithOptimizeTargetSize(size), table.WithOptimizeProgress(bar.set))
			bar.Finish()
			if err != nil {
				return err
			}
			return a.out().Optimize(&OptimizeView{Table: t.URI(), Version: res.Version, Committed: res.Committed, TargetSize: res.TargetSize,
				Partitions: res.Partitions, FilesRemoved: res.FilesRemoved, FilesAdded: res.FilesAdded, BytesRemoved: res.BytesRemoved,
				BytesAdded: res.BytesAdded, Rows: res.Rows, FilesConsidered: res.FilesConsidered})
		},
	}
	cmd.Flags().StringVar(&target, "target-size", "128MB", "target size of compacted files")
	return cmd
}

func newVerifyCmd(a *app) *cobra.Command {
	var exactlyOnce bool
	cmd := &cobra.Command{
		Use:   "verify <table>",
		Short: "Check the table's consistency (exit 3 when a problem is found)",
		Long: `verify checks that every file the latest snapshot references exists with its
recorded size, that the log is contiguous (and starts at version 0 or at a
checkpoint), that every commit decodes, and that each checkpoint holds what
the JSON commits it summarises produce: the same live files, protocol,
metadata, txns and domain metadata.

With --exactly-once it reads the log instead and reports, per streaming
query (txn appId), the epochs committed by STREAMING UPDATE commits and txn
actions, with gaps, repeats and epochs that went backwards.

Exit code 0 when the table is clean, 3 when a problem was found (with
--exactly-once too: a gap in the log or a commit that does not decode), 1
when the check itself failed (no table, an I/O error).`,
		Example: "  deltactl verify ./demo-data/flights\n  deltactl verify --exactly-once ./demo-data/flights -o json",
		Args:    exactArgs(1),
		RunE: a.onStore(func(cmd *cobra.Command, store table.Store) error {
			ctx := cmd.Context()
			if exactlyOnce {
				rep, err := table.VerifyExactlyOnce(ctx, store, table.WithVerifyLogger(a.logger))
				if err != nil {
					// A gap or a corrupt file in the log is what verify is
					// for: a failed verification (3), not an error (1).
					v := exactlyOnceLogProblem(store.URI(), err)
					if v == nil {
						return err
					}
					return verdict(a.out().ExactlyOnce(v), false)
				}
				return verdict(a.out().ExactlyOnce(exactlyOnceView(store.URI(), rep)), rep.OK())
			}
			bar := a.lateProgress("verify", "")
			rep, err := table.Verify(ctx, store, table.WithVerifyProgress(bar.setInt), table.WithVerifyLogger(a.logger))
			bar.Finish()
			if err != nil {
				return err
			}
			return verdict(a.out().Verify(verifyView(store.URI(), rep)), rep.OK())
		}),
	}
	cmd.Flags().BoolVar(&exactlyOnce, "exactly-once", false, "check the epochs of streaming queries instead")
	return cmd
}

// verdict is verify's result once its report is printed (printErr the
// printing's error): errVerifyFailed when the report is not ok.
func verdict(printErr error, ok bool) error {
	if printErr != nil {
		return printErr
	}
	if !ok {
		return errVerifyFailed
	}
	return nil
}

func newCleanupCmd(a *app) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:     "cleanup <table>",
		Aliases: []string{"log-cleanup"},
		Short:   "Delete expired log files (delta.logRetentionDuration)",
		Long: `cleanup deletes commit and checkpoint files older than the table's
delta.logRetentionDuration (30 days when unset) below the newest checkpoint
that keeps every later version reconstructable. Data files are not touched
(see vacuum).`,
		Args: exactArgs(1),
		RunE: a.onTable(func(cmd *cobra.Command, t *table.Table) error {
			res, err := t.CleanupLog(cmd.Context(), table.WithCleanupDryRun(dryRun))
			if err != nil {
				return err
			}
			deleted := append([]string{}, res.Deleted...)
			return a.out().Cleanup(&CleanupView{Table: t.URI(), DryRun: dryRun, KeepFrom: res.KeepFrom, Deleted: deleted})
		}),
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted; delete nothing")
	return cmd
}
