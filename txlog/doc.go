// Package txlog reads and writes the Delta transaction log (delta-io/delta
// PROTOCOL.md, "the spec" in this package's comments).
//
// Reading:
//
//   - Actions: Protocol, Metadata, Add, Remove, AddCDCFile, Txn, CommitInfo,
//     DomainMetadata, CheckpointMetadata, Sidecar, wrapped one per log line in
//     Action; EncodeCommit writes a commit file and ReadCommit reads one (spec
//     "Actions"). Required fields are always written, optional ones only
//     when set; unknown actions and fields are ignored on read.
//   - Load lists "_delta_log/" once (from the _last_checkpoint hint when it
//     is usable), picks the newest complete checkpoint at or before the
//     wanted version (classic, multi-part, or UUID-named v2 with sidecars),
//     checks that the commits after it are contiguous, and replays them into
//     an immutable Snapshot (spec "Action Reconciliation"). A checkpoint that
//     cannot be read (empty, garbage, truncated, a part or sidecar missing)
//     is treated as absent: replay goes around it from an older checkpoint
//     or the commits, logs a warning (WithLoadLogger) and lists it in
//     Snapshot.SkippedCheckpoints; only when the commits it stands for are
//     gone is it an error. AtVersion and
//     AtTimestamp select older versions; Snapshot.Update reads only newer
//     commits. ReadCommit and Commits read single commits and version ranges.
//   - The protocol gate (checkReadable, checkWritable, CheckWritableTable)
//     refuses tables whose reader or writer features deltakit does not
//     implement, naming them (spec "Table Features").
//   - Deletion vectors are replayed by descriptor (unique id, file location:
//     DeletionVectorDescriptor.AbsolutePath, Locate); reading and writing
//     their bitmaps and files is package txlog/dvcodec (spec "Deletion
//     Vectors", "Deletion Vector Format").
//
// Writing:
//
//   - Transaction (NewTransaction, CreateTransaction) is the optimistic
//     commit (spec "Transaction Log Entries"): Add, UpdateMetadata,
//     UpdateProtocol stage actions; ReadFiles, ReadWholeTable and
//     RequireSerializable record what it read; Commit writes the next
//     version with a put-if-absent, and a commit that loses a race reads
//     the winning commits a few versions at a time in parallel, once each,
//     and checks them for conflicts (ConflictError: ErrConcurrentAppend,
//     ErrConcurrentDeleteRead, ...) before retrying (WithBackoff). Each
//     attempt stamps what depends on the commit before it: in-commit
//     timestamps (incommit_timestamps.go) and row ids with the
//     delta.rowTracking high-water mark (rowtracking.go, spec "Row
//     Tracking").
//   - The writer-feature table (WriterFeatures, features.go) says which
//     writer features are written and which refused; ProtocolFor derives the
//     protocol a schema and table properties need, and CheckWritableProtocol,
//     CheckWritableSnapshot, CheckWritableTable refuse the rest by name.
//   - WriteCheckpoint writes a classic V1 checkpoint and _last_checkpoint
//     (EncodeCheckpoint returns the bytes). Commit writes the checkpoint due
//     every delta.checkpointInterval versions itself, or, with
//     WithCheckpointer, hands it to a Checkpointer that writes it in the
//     background, off the commit latency path (package table does so by
//     default: each table lineage owns one, see table.Table.Close).
//   - CleanupLog deletes the log files (commits, checkpoints, .crc) below
//     the newest complete checkpoint that, with everything before it, is
//     older than delta.logRetentionDuration (spec "Metadata Cleanup").
//
// Names and paths: CommitKey, CheckpointKey, LastCheckpointKey and
// ParseLogKey name the files of "_delta_log/", ListLogFiles lists them;
// DecodePath and PathResolver map a log path to a store key and refuse
// paths outside the table root (ErrPathOutsideTable); ParseInterval reads
// the interval properties (delta.logRetentionDuration, ...); Reconciler
// is the one reconciliation rule of replay, shared with table's verify.
//
// Logical files are keyed by their URI-decoded path and deletion vector
// unique id (FileKey), so an add and a remove that spell one path with
// different percent-encodings still reconcile, as in Spark, which compares
// canonicalized paths. Replay never parses per-file statistics; Add.NumRecords
// does when asked. A checkpoint that holds them only as add.stats_parsed
// (delta.checkpoint.writeStatsAsJson=false) gets them back as the stats JSON
// Spark would have written, and add.partitionValues_parsed stands in for a
// missing add.partitionValues.
//
// Errors wrap the sentinels of errors.go (ErrCorruptLog, ErrVersionNotFound,
// ErrUnsupportedFeature, ErrUnsupportedProtocol, ErrNoMetadata, ...) inside
// typed errors that name the file, version or feature; match them with
// errors.Is and errors.As.
package txlog
