package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deltakit/deltakit/ingest"
	"github.com/deltakit/deltakit/table"
)

// MergeView is the output of merge: the DML counts and MERGE's own.
type MergeView struct {
	DMLView
	SourceRows   int64 `json:"sourceRows"`
	InsertedRows int64 `json:"insertedRows"`
	// The updated and deleted rows by the kind of clause that acted.
	MatchedUpdatedRows            int64 `json:"matchedUpdatedRows"`
	MatchedDeletedRows            int64 `json:"matchedDeletedRows"`
	NotMatchedBySourceDeletedRows int64 `json:"notMatchedBySourceDeletedRows"`
}

func (o *jsonOutput) Merge(v *MergeView) error { return o.write(v) }

func (o *textOutput) Merge(v *MergeView) error {
	if !v.Committed {
		_, err := fmt.Fprintf(o.w, "merge %s: %d source row(s), nothing to change at version %d; no commit made\n", v.Table, v.SourceRows, v.Version)
		return err
	}
	_, err := fmt.Fprintf(o.w, "merge %s: version %d, %d source row(s): %d inserted, %d updated, %d deleted (%d when matched, %d when not matched by source), %d copied; %d file(s) added, %d removed, deletion vectors %d added, %d updated, %d removed\n",
		v.Table, v.Version, v.SourceRows, v.InsertedRows, v.UpdatedRows, v.DeletedRows, v.MatchedDeletedRows, v.NotMatchedBySourceDeletedRows,
		v.CopiedRows, v.FilesAdded, v.FilesRemoved, v.DeletionVectorsAdded, v.DeletionVectorsUpdated, v.DeletionVectorsRemoved)
	return err
}

type mergeFlags struct {
	source, format, delimiter         string
	on                                []string
	matched, notMatched, notMatchedBy string
	mergeSchema                       bool
	retries                           int
}

func newMergeCmd(a *app) *cobra.Command {
	var f mergeFlags
	cmd := &cobra.Command{
		Use:   "merge <table> --source FILE --on k1,k2",
		Short: "Upsert the rows of a file into a table by key (MERGE)",
		Long: `merge runs one MERGE INTO the table from the rows of --source (a Parquet,
CSV or NDJSON file, or a directory of them, read as ingest reads them; "-"
reads standard input), joined on equality of the --on key columns
(target.k = source.k for each; a null key matches nothing):

  --when-matched update-all (default) sets every column of a matched target
    row from its source row; delete deletes it; none leaves it.
  --when-not-matched insert-all (default) inserts the source rows that match
    no target row; none does not.
  --when-not-matched-by-source delete deletes the target rows that no source
    row matches (the table becomes the source, by key); none (default)
    keeps them. delete reads every file of the table.

As Spark's MERGE: a target row matched by two source rows is an error naming
the key, when a WHEN MATCHED action could change it (deduplicate the source
first: ingest --merge-on keeps the latest row per key). Target files are
pruned by the source's keys before any is read; untouched files are not
rewritten; changed rows are removed with deletion vectors where the table
has them enabled, else by rewriting their files. The source must have
every column of the table; its columns the table lacks are ignored, as in
Spark, unless --merge-schema adds them to the table (update-all and
insert-all; target columns the source lacks then keep their values or are
null). It prints the MERGE's
metrics (text, or the document of -o json with operationMetrics as in
commitInfo). Nothing is written on error.`,
		Example: `  deltactl merge ./people --source changes.csv --on id
  deltactl merge ./people --source snapshot.parquet --on id --when-not-matched-by-source delete`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.merge(cmd.Context(), args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.source, "source", "", "the source rows: a Parquet, CSV or NDJSON file or directory, or - for standard input (required)")
	fl.StringSliceVar(&f.on, "on", nil, "key columns, comma-separated: target.k = source.k for each (required)")
	fl.StringVar(&f.matched, "when-matched", "update-all", "action on matched target rows: update-all, delete or none")
	fl.StringVar(&f.notMatched, "when-not-matched", "insert-all", "action on source rows without a target row: insert-all or none")
	fl.StringVar(&f.notMatchedBy, "when-not-matched-by-source", "none", "action on target rows without a source row: delete or none")
	fl.StringVar(&f.format, "format", "", "source format: parquet, csv or ndjson (default: from the file extension)")
	fl.StringVar(&f.delimiter, "delimiter", "", "CSV field delimiter (default ',', tab for .tsv)")
	fl.IntVar(&f.retries, "retries", 0, retriesUsage)
	fl.BoolVar(&f.mergeSchema, "merge-schema", false, "add the source's columns the table lacks (schema evolution, as Spark's autoMerge)")
	return cmd
}

func (a *app) merge(ctx context.Context, uri string, f *mergeFlags) error {
	if f.source == "" {
		return usagef("--source is required")
	}
	if len(f.on) == 0 {
		return usagef("--on k1,k2 is required")
	}
	var clauses int
	for _, c := range []struct{ flag, val, allowed string }{
		{"--when-matched", f.matched, "update-all delete none"},
		{"--when-not-matched", f.notMatched, "insert-all none"},
		{"--when-not-matched-by-source", f.notMatchedBy, "delete none"},
	} {
		ok := false
		for _, v := range strings.Fields(c.allowed) {
			ok = ok || c.val == v
		}
		if !ok {
			return usagef("%s %q: want one of %s", c.flag, c.val, strings.ReplaceAll(c.allowed, " ", ", "))
		}
		if c.val != "none" {
			clauses++
		}
	}
	if clauses == 0 {
		return usagef("every clause is none: nothing to do")
	}
	t, err := a.openTable(ctx, uri)
	if err != nil {
		return err
	}
	fopts, err := sourceFormatOptions(f.format, f.delimiter)
	if err != nil {
		return err
	}
	iopts := append([]ingest.Option{ingest.WithTargetSchema(t.Schema()), ingest.WithStdin(a.stdin)}, fopts...)
	src, err := ingest.Open(ctx, f.source, iopts...)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := checkMergeKeys("--on", f.on, src.Schema(), t); err != nil {
		return err
	}
	var rows []table.Row
	for row, err := range src.Rows(ctx, 0) {
		if err != nil {
			return fmt.Errorf("merge: reading %s: %w (nothing was committed)", strings.Join(src.Files(), ", "), err)
		}
		rows = append(rows, row)
	}
	m := table.NewMerge(table.MergeRows(src.Schema(), rows), table.MergeOn(f.on...))
	switch f.matched {
	case "update-all":
		m = m.WhenMatched().UpdateAll()
	case "delete":
		m = m.WhenMatched().Delete()
	}
	if f.notMatched == "insert-all" {
		m = m.WhenNotMatched().InsertAll()
	}
	if f.notMatchedBy == "delete" {
		m = m.WhenNotMatchedBySource().Delete()
	}
	opts := []table.WriteOption{table.WithOperationParameters(map[string]string{"source": src.Files()[0]})}
	if f.mergeSchema {
		opts = append(opts, table.WithSchemaEvolution())
	}
	opts = append(opts, table.WithConflictRetries(f.retries))
	_, res, err := t.Merge(ctx, m, opts...)
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "WithSchemaEvolution") {
			return &hintError{msg: strings.ReplaceAll(msg, "WithSchemaEvolution", "merge --merge-schema"), err: err}
		}
		return err
	}
	v := &MergeView{DMLView: *dmlView(t, "merge", &res.DMLResult), SourceRows: res.SourceRows, InsertedRows: res.InsertedRows,
		MatchedUpdatedRows: res.MatchedUpdatedRows, MatchedDeletedRows: res.MatchedDeletedRows,
		NotMatchedBySourceDeletedRows: res.NotMatchedBySourceDeletedRows}
	return a.out().Merge(v)
}
