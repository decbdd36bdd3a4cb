// Package table is deltakit's public API for Delta tables: everything a
// user does with a table goes through this package, as methods of *Table
// where Go allows (generic functions where the row type is a type
// parameter: Append, Overwrite, ScanAs, WriteFilesOf).
//
// A *Table is an immutable view of one table version. Every write operation
// commits a new version through the package's one operation path
// (commit.go), above txlog's single commit, and returns a new *Table; the
// old one stays valid, so a *Table is safe to share between goroutines.
// The table's clock (WithClock) is the one every operation reads.
//
// Capabilities, each with its Example:
//
//   - Create and open by URI (local path, file://, s3://, mem://): Create,
//     Open, WithPartitionColumns, WithProperties (Example); S3 and MinIO:
//     WithS3Endpoint (ExampleWithS3Endpoint).
//   - Append and overwrite, typed from Go structs: Append, Overwrite
//     (ExampleAppend, ExampleOverwrite; struct tags are documented with
//     SchemaOf); untyped Rows in schema order: Table.AppendRows,
//     Table.OverwriteRows with WithReplaceWhere
//     (ExampleTable_OverwriteRows).
//   - Scan typed (ScanAs, Example), as Rows (Table.Scan, ExampleTable_Scan)
//     or as Apache Arrow record batches (Table.ScanArrow; writes from Arrow:
//     Table.AppendArrow, Table.OverwriteArrow; ExampleTable_AppendArrow),
//     with filters (WithFilter over Col and its comparison methods, And, Or,
//     Not; partition pruning and stats-based file skipping), column
//     selection (WithColumns) and time travel (AtVersion, AtTimestamp;
//     ExampleAtTimestamp).
//   - DELETE (Table.Delete, ExampleTable_Delete), UPDATE (Table.Update,
//     ExampleTable_Update), MERGE (NewMerge, Table.Merge,
//     ExampleTable_Merge) and RESTORE (Table.Restore, ExampleTable_Restore),
//     with deletion vectors where delta.enableDeletionVectors=true and
//     copy-on-write otherwise.
//   - Change data feed (delta.enableChangeDataFeed=true): Table.Changes
//     (ExampleTable_Changes).
//   - Schema evolution on write: WithSchemaEvolution
//     (ExampleWithSchemaEvolution).
//   - Column mapping: Table.RenameColumn (ExampleTable_RenameColumn) and
//     Table.DropColumn (ExampleTable_DropColumn).
//   - Table properties: Table.SetProperties, Table.UnsetProperties
//     (ExampleTable_SetProperties).
//   - Maintenance: Table.Optimize and Table.Vacuum (ExampleTable_Optimize),
//     Verify (ExampleVerify), Table.CleanupLog.
//   - History: Table.History (ExampleTable_History).
//   - Checkpoints: Table.Checkpoint (ExampleTable_Checkpoint). The
//     checkpoint that becomes due every delta.checkpointInterval versions
//     is written in the background by default, off the commit's latency, by
//     a checkpointer that the tables derived from one Open or Create share:
//     call Close before the process exits to wait for it, or open the table
//     WithSyncCheckpoints to write it inside the commit (see
//     bgcheckpoint.go's comment and Close).
//   - First writes into a location that may not hold a table yet, by
//     several writers at once: CreateOrOpen (ExampleCreateOrOpen) and
//     drafts, whose data files are written before the table exists
//     (NewDraft, Table.DraftAppend; ExampleNewDraft).
//   - Exactly-once streaming sinks (one commit per epoch, upserts by key,
//     two-phase commit, Kafka ingest) are package streamsink, built on this
//     one (streamsink's ExampleSink_WriteEpoch, ExampleSink_Prepare).
//
// Below the level of an opened table, OpenStore, LoadSnapshot, ReadCommit,
// LogHistory and OldestCommitOf read a table's store and log, for tables
// that may not open (deltactl's inspect commands).
package table
