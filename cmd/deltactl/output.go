package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/deltakit/deltakit/schema"
)

// Output presents the result of a command. Every command builds a view and
// hands it to the Output chosen by -o: textOutput for people, jsonOutput for
// scripts (one JSON document per command, the view as is).
type Output interface {
	History(*HistoryView) error
	Log(*LogView) error
	Snapshot(*SnapshotView) error
	Files(*FilesView) error
	Schema(*SchemaView) error
	Txns(*TxnsView) error
	Created(*CreateView) error
	// Epoch reports one epoch of a streaming ingest as it finishes; the
	// JSON output prints the epochs with Ingest instead.
	Epoch(*EpochView) error
	Ingest(*IngestView) error
	Checkpoint(*CheckpointView) error
	Vacuum(*VacuumView) error
	Optimize(*OptimizeView) error
	DML(*DMLView) error
	Merge(*MergeView) error
	Alter(*AlterView) error
	Verify(*VerifyView) error
	ExactlyOnce(*ExactlyOnceView) error
	Cleanup(*CleanupView) error
	Version(*VersionView) error
	Report(*ReportView) error
}

// jsonOutput writes each view as one indented JSON document.
type jsonOutput struct{ w io.Writer }

func newJSONOutput(w io.Writer) Output { return &jsonOutput{w: w} }

func (o *jsonOutput) write(v any) error {
	enc := json.NewEncoder(o.w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func (o *jsonOutput) History(v *HistoryView) error         { return o.write(v) }
func (o *jsonOutput) Log(v *LogView) error                 { return o.write(v) }
func (o *jsonOutput) Snapshot(v *SnapshotView) error       { return o.write(v) }
func (o *jsonOutput) Files(v *FilesView) error             { return o.write(v) }
func (o *jsonOutput) Schema(v *SchemaView) error           { return o.write(v) }
func (o *jsonOutput) Txns(v *TxnsView) error               { return o.write(v) }
func (o *jsonOutput) Created(v *CreateView) error          { return o.write(v) }
func (o *jsonOutput) Epoch(*EpochView) error               { return nil }
func (o *jsonOutput) Ingest(v *IngestView) error           { return o.write(v) }
func (o *jsonOutput) Checkpoint(v *CheckpointView) error   { return o.write(v) }
func (o *jsonOutput) Vacuum(v *VacuumView) error           { return o.write(v) }
func (o *jsonOutput) Optimize(v *OptimizeView) error       { return o.write(v) }
func (o *jsonOutput) Verify(v *VerifyView) error           { return o.write(v) }
func (o *jsonOutput) ExactlyOnce(v *ExactlyOnceView) error { return o.write(v) }
func (o *jsonOutput) Cleanup(v *CleanupView) error         { return o.write(v) }
func (o *jsonOutput) Version(v *VersionView) error         { return o.write(v) }

// textOutput writes aligned tables and short reports for people.
type textOutput struct{ w io.Writer }

func newTextOutput(w io.Writer) Output { return &textOutput{w: w} }

func (o *textOutput) table(header []string, rows [][]string) error {
	tw := newColumnWriter(o.w, 2)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// kv writes "key: value" lines with the values aligned.
func (o *textOutput) kv(pairs ...string) error {
	tw := newColumnWriter(o.w, 1)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", pairs[i], pairs[i+1])
	}
	return tw.Flush()
}

// compactMap formats a map as "k=v, k=v" with sorted keys; values that are
// not strings are JSON.
func compactMap(m map[string]any) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+scalar(m[k]))
	}
	return strings.Join(parts, ", ")
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "null"
	case json.Number:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (o *textOutput) History(v *HistoryView) error {
	rows := make([][]string, 0, len(v.Commits))
	for _, c := range v.Commits {
		if c.Error != "" {
			// In place of the commit: the reason (naming the file).
			rows = append(rows, []string{strconv.FormatInt(c.Version, 10), c.Timestamp, "-", "UNREADABLE", c.Error, "-"})
			continue
		}
		rows = append(rows, []string{strconv.FormatInt(c.Version, 10), c.Timestamp, orDash(c.CommitInfoTimestamp), orDash(c.Operation),
			orDash(compactMap(c.Parameters)), orDash(compactMap(c.Metrics))})
	}
	if err := o.table([]string{"VERSION", "TIMESTAMP", "COMMITINFO.TIMESTAMP", "OPERATION", "PARAMETERS", "METRICS"}, rows); err != nil {
		return err
	}
	if v.LoadError != "" {
		if err := o.note("the table cannot be loaded: " + v.LoadError); err != nil {
			return err
		}
	}
	if v.Cleaned {
		return o.note(cleanedNote(v.OldestCommit))
	}
	return nil
}

// cleanedNote says that log cleanup removed the commits before oldest.
func cleanedNote(oldest int64) string {
	if oldest < 0 {
		return "no commit file is left in the log: log cleanup removed them (the table is read from its checkpoint)"
	}
	return fmt.Sprintf("commits before version %d were removed by log cleanup", oldest)
}

// note writes a "# ..." line.
func (o *textOutput) note(s string) error {
	_, err := fmt.Fprintf(o.w, "# %s\n", s)
	return err
}

func (o *textOutput) Log(v *LogView) error {
	fmt.Fprintf(o.w, "# version %d: %d action(s)\n", v.Version, len(v.Actions))
	if v.Note != "" {
		fmt.Fprintf(o.w, "# %s\n", v.Note)
	}
	for _, a := range v.Actions {
		if _, err := fmt.Fprintln(o.w, indentJSON(a)); err != nil {
			return err
		}
	}
	return nil
}

func (o *textOutput) Snapshot(v *SnapshotView) error {
	features := func(f []string) string {
		if len(f) == 0 {
			return "-"
		}
		return strings.Join(f, ", ")
	}
	props := make([]string, 0, len(v.Properties))
	for _, k := range slices.Sorted(maps.Keys(v.Properties)) {
		props = append(props, k+"="+v.Properties[k])
	}
	rows := "-"
	if v.FilesWithoutStats == 0 {
		rows = strconv.FormatInt(v.NumRows, 10)
	} else if v.FilesWithoutStats < v.NumFiles {
		rows = fmt.Sprintf("%d (+ %d file(s) without stats)", v.NumRows, v.FilesWithoutStats)
	}
	cp := "-"
	if v.CheckpointVersion >= 0 {
		cp = strconv.FormatInt(v.CheckpointVersion, 10)
	}
	err := o.kv(
		"table", v.Table,
		"version", strconv.FormatInt(v.Version, 10),
		"timestamp", v.Timestamp,
		"protocol", fmt.Sprintf("reader %d, writer %d", v.Protocol.MinReaderVersion, v.Protocol.MinWriterVersion),
		"reader features", features(v.Protocol.ReaderFeatures),
		"writer features", features(v.Protocol.WriterFeatures),
		"id", v.ID,
		"name", orDash(v.Name),
		"description", orDash(v.Description),
		"created", orDash(v.CreatedTime),
		"partition columns", orDash(strings.Join(v.PartitionColumns, ", ")),
		"properties", orDash(strings.Join(props, ", ")),
		"files", strconv.Itoa(v.NumFiles),
		"size", fmt.Sprintf("%s (%d bytes)", humanBytes(v.SizeBytes), v.SizeBytes),
		"rows", rows,
		"txns", strconv.Itoa(v.Txns),
		"checkpoint", cp,
	)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.w, "schema:")
	return o.fields(v.Schema, "  ")
}

func (o *textOutput) fields(fs []FieldView, indent string) error {
	tw := newColumnWriter(o.w, 2)
	for _, f := range fs {
		null := ""
		if !f.Nullable {
			null = "not null"
		}
		if null == "" {
			fmt.Fprintf(tw, "%s%s\t%s\n", indent, f.Name, f.Type)
		} else {
			fmt.Fprintf(tw, "%s%s\t%s\t%s\n", indent, f.Name, f.Type, null)
		}
	}
	return tw.Flush()
}

func (o *textOutput) Files(v *FilesView) error {
	rows := make([][]string, 0, len(v.Files))
	for _, f := range v.Files {
		part := make([]string, 0, len(f.PartitionValues))
		for _, k := range slices.Sorted(maps.Keys(f.PartitionValues)) {
			val := "null"
			if p := f.PartitionValues[k]; p != nil {
				val = *p
			}
			part = append(part, k+"="+val)
		}
		n := "-"
		if f.Rows != nil {
			n = strconv.FormatInt(*f.Rows, 10)
			if f.DeletedRows > 0 {
				n += fmt.Sprintf(" (-%d)", f.DeletedRows)
			}
		}
		var rng []string
		for _, k := range slices.Sorted(maps.Keys(f.Min)) {
			rng = append(rng, fmt.Sprintf("%s=[%s, %s]", k, scalar(f.Min[k]), scalar(f.Max[k])))
		}
		rows = append(rows, []string{f.Path, orDash(strings.Join(part, ",")), strconv.FormatInt(f.Size, 10), n, orDash(strings.Join(rng, " "))})
	}
	return o.table([]string{"PATH", "PARTITION", "SIZE", "ROWS", "MIN/MAX"}, rows)
}

func (o *textOutput) Schema(v *SchemaView) error {
	fmt.Fprintln(o.w, "root")
	if v.st != nil {
		printTree(o.w, v.st, " |")
	}
	return nil
}

// printTree prints a schema as Spark's printSchema does.
func printTree(w io.Writer, t schema.Type, prefix string) {
	switch t := t.(type) {
	case *schema.StructType:
		for _, f := range t.Fields {
			fmt.Fprintf(w, "%s-- %s: %s (nullable = %t)\n", prefix, f.Name, typeName(f.Type), f.Nullable)
			printTree(w, f.Type, prefix+"    |")
		}
	case *schema.ArrayType:
		fmt.Fprintf(w, "%s-- element: %s (containsNull = %t)\n", prefix, typeName(t.ElementType), t.ContainsNull)
		printTree(w, t.ElementType, prefix+"    |")
	case *schema.MapType:
		fmt.Fprintf(w, "%s-- key: %s\n", prefix, typeName(t.KeyType))
		printTree(w, t.KeyType, prefix+"    |")
		fmt.Fprintf(w, "%s-- value: %s (valueContainsNull = %t)\n", prefix, typeName(t.ValueType), t.ValueContainsNull)
		printTree(w, t.ValueType, prefix+"    |")
	}
}

func typeName(t schema.Type) string {
	switch t.(type) {
	case *schema.StructType:
		return "struct"
	case *schema.ArrayType:
		return "array"
	case *schema.MapType:
		return "map"
	}
	return t.String()
}

func (o *textOutput) Txns(v *TxnsView) error {
	rows := make([][]string, 0, len(v.Txns))
	for _, t := range v.Txns {
		rows = append(rows, []string{t.AppID, strconv.FormatInt(t.Version, 10), orDash(t.LastUpdated)})
	}
	return o.table([]string{"APP ID", "VERSION", "LAST UPDATED"}, rows)
}

func (o *textOutput) Created(v *CreateView) error {
	fmt.Fprintf(o.w, "created %s at version %d (id %s, protocol reader %d writer %d)\n",
		v.Table, v.Version, v.ID, v.Protocol.MinReaderVersion, v.Protocol.MinWriterVersion)
	return o.fields(v.Schema, "  ")
}

func (o *textOutput) Epoch(v *EpochView) error {
	var err error
	switch v.Status {
	case "committed":
		_, err = fmt.Fprintf(o.w, "epoch %d: committed as version %d (%d rows, %d file(s))\n", v.Epoch, v.Version, v.Rows, v.Files)
	case "resumed":
		span := "epoch 0"
		if v.Epoch > 0 {
			span = fmt.Sprintf("epochs 0-%d", v.Epoch)
		}
		_, err = fmt.Fprintf(o.w, "%s: skipped, already committed by an earlier run (table version %d); resuming at epoch %d\n", span, v.Version, v.Epoch+1)
	case "skipped":
		_, err = fmt.Fprintf(o.w, "epoch %d: skipped by the sink, the table already holds it (as of version %d)\n", v.Epoch, v.Version)
	}
	return err
}

func (o *textOutput) Ingest(v *IngestView) error {
	verb := "appended to"
	switch {
	case v.Created:
		verb = "created"
	case len(v.MergeOn) > 0:
		verb = "upserted into"
	}
	if len(v.MergeOn) > 0 {
		// Input rows, what the MERGE did with them and the resulting table
		// are three different counts: say which is which.
		fmt.Fprintf(o.w, "%s %s: version %d, %d input row(s) merged by key %s: %d inserted, %d updated; %d file(s), %s written\n",
			verb, v.Table, v.Version, v.Rows, strings.Join(v.MergeOn, ", "), v.InsertedRows, v.UpdatedRows, v.Files, humanBytes(v.Bytes))
		if v.TableRows != nil {
			fmt.Fprintf(o.w, "the table now holds %d row(s)\n", *v.TableRows)
		}
	} else {
		fmt.Fprintf(o.w, "%s %s: version %d, %d rows in %d file(s), %s\n", verb, v.Table, v.Version, v.Rows, v.Files, humanBytes(v.Bytes))
	}
	if v.QueryID != "" {
		fmt.Fprintf(o.w, "query %s: %d epoch(s) committed, %d skipped by the sink, %d skipped on resume", v.QueryID, v.Committed, v.Skipped, v.Resumed)
		if v.Stopped {
			fmt.Fprint(o.w, "; stopped by --max-epochs before the end of the input")
		}
		fmt.Fprintln(o.w)
	}
	if v.DeadLetterTopic != "" {
		fmt.Fprintf(o.w, "%d bad record(s) sent to the dead-letter topic %s\n", v.DeadLetters, v.DeadLetterTopic)
	}
	return nil
}

func (o *textOutput) Checkpoint(v *CheckpointView) error {
	_, err := fmt.Fprintf(o.w, "checkpoint of version %d written: %s\n", v.Version, v.Path)
	return err
}

func (o *textOutput) Vacuum(v *VacuumView) error {
	verb := "deleted"
	if v.DryRun {
		verb = "would delete"
	}
	if v.DryRun && len(v.Files) > 0 {
		rows := make([][]string, 0, len(v.Files))
		for _, f := range v.Files {
			why := "unreferenced, modified " + f.ModTime
			if f.Removed != "" {
				why = "removed " + f.Removed
			}
			rows = append(rows, []string{f.Path, strconv.FormatInt(f.Size, 10), why})
		}
		if err := o.table([]string{"PATH", "SIZE", "WHY"}, rows); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(o.w, "vacuum %s at version %d: %s %d file(s), %s (retention %s, before %s; %d data file(s) scanned)\n",
		v.Table, v.Version, verb, v.NumFiles, humanBytes(v.Bytes), v.Retention, v.DeleteBefore, v.Scanned)
	return err
}

func (o *textOutput) Optimize(v *OptimizeView) error {
	if !v.Committed {
		_, err := fmt.Fprintf(o.w, "optimize %s: nothing to compact at version %d (%d file(s) considered)\n", v.Table, v.Version, v.FilesConsidered)
		return err
	}
	_, err := fmt.Fprintf(o.w, "optimize %s: version %d, %d file(s) (%s) compacted into %d (%s) in %d partition(s), %d rows\n",
		v.Table, v.Version, v.FilesRemoved, humanBytes(v.BytesRemoved), v.FilesAdded, humanBytes(v.BytesAdded), v.Partitions, v.Rows)
	return err
}

func (o *textOutput) problems(ps []VerifyProblemView) {
	for _, p := range ps {
		where := ""
		if p.Version != nil {
			where = fmt.Sprintf(" at version %d", *p.Version)
		}
		if p.Path != "" {
			where += " (" + p.Path + ")"
		}
		fmt.Fprintf(o.w, "PROBLEM %s%s: %s\n", p.Kind, where, p.Detail)
	}
}

func (o *textOutput) Verify(v *VerifyView) error {
	o.problems(v.Problems)
	status := "OK"
	if !v.OK {
		status = fmt.Sprintf("FAILED (%d problem(s))", len(v.Problems))
	}
	unchecked := ""
	if v.CheckpointsUnchecked > 0 {
		unchecked = fmt.Sprintf(" (%d more could not be: the commits before them were cleaned up)", v.CheckpointsUnchecked)
	}
	commits := "no commit file (the log holds only checkpoints)"
	if v.FirstCommit >= 0 {
		commits = fmt.Sprintf("commits %d-%d (%d read)", v.FirstCommit, v.LastCommit, v.Commits)
	}
	_, err := fmt.Fprintf(o.w, "verify %s: %s; version %d, %s, %d checkpoint(s) compared with the commits%s, %d file(s) (%s) present\n",
		v.Table, status, v.Version, commits, v.Checkpoints, unchecked, v.Files, humanBytes(v.Bytes))
	return err
}

// versionSpan names the versions verify --exactly-once read: "versions
// 3-11", or, for a log of only a checkpoint (no commit read), "no commit
// after the checkpoint at version 10".
func versionSpan(from, to int64) string {
	if from > to {
		return fmt.Sprintf("no commit after the checkpoint at version %d", to)
	}
	return fmt.Sprintf("versions %d-%d", from, to)
}

func (o *textOutput) ExactlyOnce(v *ExactlyOnceView) error {
	if len(v.Problems) > 0 {
		o.problems(v.Problems)
		_, err := fmt.Fprintf(o.w, "verify --exactly-once %s: FAILED (%d problem(s) in the log; the epochs cannot be checked)\n", v.Table, len(v.Problems))
		return err
	}
	if len(v.Queries) == 0 {
		fmt.Fprintf(o.w, "no streaming query (txn appId) in %s\n", versionSpan(v.FromVersion, v.Version))
	}
	for _, q := range v.Queries {
		status := "exactly once"
		if !q.OK {
			status = "NOT exactly once"
		}
		last := ""
		if q.LastVersion >= 0 {
			last = fmt.Sprintf(" (last at version %d)", q.LastVersion)
		}
		fmt.Fprintf(o.w, "query %s: %s; %d commit(s), epochs %s%s\n",
			q.AppID, status, q.Commits, orDash(strings.Join(q.Committed, ",")), last)
		if q.Base >= 0 {
			fmt.Fprintf(o.w, "  epochs up to %d committed before version %d (older commits cleaned up)\n", q.Base, v.FromVersion)
		}
		if len(q.Gaps) > 0 {
			fmt.Fprintf(o.w, "  gaps: %s\n", strings.Join(q.Gaps, ","))
		}
		for _, r := range q.Repeats {
			fmt.Fprintf(o.w, "  repeat: epoch %d committed by versions %v\n", r.Epoch, r.Versions)
		}
		for _, b := range q.Backwards {
			fmt.Fprintf(o.w, "  backwards: version %d committed epoch %d after epoch %d\n", b.Version, b.Epoch, b.After)
		}
		for _, m := range q.Mismatches {
			fmt.Fprintf(o.w, "  mismatch: %s\n", m)
		}
	}
	status := "OK"
	if !v.OK {
		status = "FAILED"
	}
	_, err := fmt.Fprintf(o.w, "verify --exactly-once %s: %s (%s)\n", v.Table, status, versionSpan(v.FromVersion, v.Version))
	return err
}

func (o *textOutput) Version(v *VersionView) error {
	_, err := fmt.Fprintln(o.w, v.String())
	return err
}

func (o *textOutput) Cleanup(v *CleanupView) error {
	verb := "deleted"
	if v.DryRun {
		verb = "would delete"
	}
	for _, k := range v.Deleted {
		fmt.Fprintln(o.w, k)
	}
	_, err := fmt.Fprintf(o.w, "log cleanup %s: %s %d log file(s); versions from %d on stay reconstructable\n", v.Table, verb, len(v.Deleted), v.KeepFrom)
	return err
}
