package main

import "slices"

// The checkpoint field table (spec "Checkpoint Schema"): one entry per
// column WriteCheckpoint writes and the checkpoint reader knows. Adding a
// field to an action's checkpoint column is one entry here (next to the
// field in the action's struct in actions.go), then go generate ./txlog.
// The order of the entries is the order of the columns in the files
// written: append new fields at the end.

// kind is how a field is stored. Inside a non-null action column, fields
// that always have a value are required Parquet fields: parquet-go writes
// the zero value of an "optional" non-pointer field as null, and Spark fails
// on a null dataChange, size or txn version. Readers accept both.
type kind int

const (
	str        kind = iota // string, required
	optStr                 // string in the action, optional (null when "")
	i64                    // int64, required
	optI64                 // *int64, optional
	i32                    // int32, required
	optI32                 // *int32, optional
	boolean                // bool, required
	optBool                // *bool, optional
	strMap                 // map[string]string, required
	optStrMap              // map[string]string, optional
	strList                // []string, required list
	optStrList             // []string, optional list
	dv                     // *DeletionVectorDescriptor as the rowDV struct
	format_                // Format as the rowFormat struct
)

type field struct {
	name   string // Parquet column name (the JSON name)
	goName string // field name in the action struct and the row struct
	kind   kind
	slot   string // map and list kinds: the reader's slot constant
	// read overrides the reader's setter statement (a *rowAsm, v parquet.Value).
	read string
	// nonNil: a nil map or list is written (lists) or read (maps, lists)
	// as an empty one.
	nonNil bool
	// packed (add only): packedFiles stores the field in every file's
	// record; every other add field is kept aside for the few files that
	// have it (addRare).
	packed bool
}

type action struct {
	goType      string // action struct
	actionField string // field of Action
	rowField    string // field of checkpointRow
	rowType     string
	column      string // top-level Parquet column
	top         string // the reader's top-level column constant
	asm         string // the rowAsm field the reader assembles the action in
	v1          bool   // written to V1 classic checkpoints
	doc         string
	fields      []field
}

var actions = []action{
	{goType: "Txn", actionField: "Txn", rowField: "Txn", rowType: "rowTxn", column: "txn", top: "colTxn", asm: "txn", v1: true,
		doc: "is the txn column.", fields: []field{
			{name: "appId", goName: "AppID", kind: str},
			{name: "version", goName: "Version", kind: i64},
			{name: "lastUpdated", goName: "LastUpdated", kind: optI64},
		}},
	{goType: "Add", actionField: "Add", rowField: "Add", rowType: "rowAdd", column: "add", top: "colAdd", asm: "add", v1: true,
		doc: "is the add column. Stats is the JSON statistics string\n// (delta.checkpoint.writeStatsAsJson).", fields: slices.Concat([]field{
			{name: "path", goName: "Path", kind: str, read: "a.addPath = valueBytes(a, v)", packed: true},
			{name: "partitionValues", goName: "PartitionValues", kind: strMap, slot: "mapAddPartitionValues", packed: true},
			{name: "size", goName: "Size", kind: i64, packed: true},
			{name: "modificationTime", goName: "ModificationTime", kind: i64, packed: true},
			{name: "dataChange", goName: "DataChange", kind: boolean, packed: true},
			{name: "stats", goName: "Stats", kind: optStr, read: "a.addStats = valueBytes(a, v)", packed: true},
			{name: "tags", goName: "Tags", kind: optStrMap, slot: "mapAddTags"},
		}, dvAndRowTracking, []field{
			{name: "clusteringProvider", goName: "ClusteringProvider", kind: optStr},
		})},
	{goType: "Remove", actionField: "Remove", rowField: "Remove", rowType: "rowRemove", column: "remove", top: "colRemove", asm: "remove", v1: true,
		doc: "is the remove column (no stats or tags in checkpoints).", fields: slices.Concat([]field{
			{name: "path", goName: "Path", kind: str},
			{name: "deletionTimestamp", goName: "DeletionTimestamp", kind: optI64},
			{name: "dataChange", goName: "DataChange", kind: boolean},
			{name: "extendedFileMetadata", goName: "ExtendedFileMetadata", kind: optBool},
			{name: "partitionValues", goName: "PartitionValues", kind: optStrMap, slot: "mapRemovePartitionValues"},
			{name: "size", goName: "Size", kind: optI64},
		}, dvAndRowTracking)},
	{goType: "Metadata", actionField: "Metadata", rowField: "MetaData", rowType: "rowMetaData", column: "metaData", top: "colMetaData", asm: "meta", v1: true,
		doc: "is the metaData column.", fields: []field{
			{name: "id", goName: "ID", kind: str},
			{name: "name", goName: "Name", kind: optStr},
			{name: "description", goName: "Description", kind: optStr},
			{name: "format", goName: "Format", kind: format_},
			{name: "schemaString", goName: "SchemaString", kind: str},
			{name: "partitionColumns", goName: "PartitionColumns", kind: strList, slot: "listPartitionColumns", nonNil: true},
			{name: "configuration", goName: "Configuration", kind: strMap, slot: "mapMetaConfiguration", nonNil: true},
			{name: "createdTime", goName: "CreatedTime", kind: optI64},
		}},
	{goType: "Protocol", actionField: "Protocol", rowField: "Protocol", rowType: "rowProtocol", column: "protocol", top: "colProtocol", asm: "proto", v1: true,
		doc: "is the protocol column. The feature lists are kept for\n// (3, 7) tables (delta-rs#2288 lost them once).", fields: []field{
			{name: "minReaderVersion", goName: "MinReaderVersion", kind: i32},
			{name: "minWriterVersion", goName: "MinWriterVersion", kind: i32},
			{name: "readerFeatures", goName: "ReaderFeatures", kind: optStrList, slot: "listReaderFeatures"},
			{name: "writerFeatures", goName: "WriterFeatures", kind: optStrList, slot: "listWriterFeatures"},
		}},
	{goType: "DomainMetadata", actionField: "DomainMetadata", rowField: "DomainMetadata", rowType: "rowDomainMetadata", column: "domainMetadata", top: "colDomainMetadata", asm: "domain", v1: true,
		doc: "is the domainMetadata column.", fields: []field{
			{name: "domain", goName: "Domain", kind: str},
			{name: "configuration", goName: "Configuration", kind: str},
			{name: "removed", goName: "Removed", kind: boolean},
		}},
	{goType: "CheckpointMetadata", actionField: "CheckpointMetadata", rowField: "CheckpointMetadata", rowType: "rowCheckpointMetadata", column: "checkpointMetadata", top: "colCheckpointMetadata", asm: "cpMeta",
		doc: "is the checkpointMetadata column (v2 spec).", fields: []field{
			{name: "version", goName: "Version", kind: i64},
			{name: "tags", goName: "Tags", kind: optStrMap, slot: "mapCheckpointMetadataTags"},
		}},
	{goType: "Sidecar", actionField: "Sidecar", rowField: "Sidecar", rowType: "rowSidecar", column: "sidecar", top: "colSidecar", asm: "sidecar",
		doc: "is the sidecar column (v2 spec).", fields: []field{
			{name: "path", goName: "Path", kind: str},
			{name: "sizeInBytes", goName: "SizeInBytes", kind: i64},
			{name: "modificationTime", goName: "ModificationTime", kind: i64},
			{name: "tags", goName: "Tags", kind: optStrMap, slot: "mapSidecarTags"},
		}},
}

// dvAndRowTracking are the last fields that add and remove share, in the
// same order: the deletion vector (spec "Deletion Vectors") and the row
// tracking fields (spec "Row Tracking"). Add has clusteringProvider after
// them.
var dvAndRowTracking = []field{
	{name: "deletionVector", goName: "DeletionVector", kind: dv},
	{name: "baseRowId", goName: "BaseRowID", kind: optI64},
	{name: "defaultRowCommitVersion", goName: "DefaultRowCommitVersion", kind: optI64},
}

// dvFields are the fields of the deletionVector struct inside add and
// remove; the reader's setters are dvSetters in checkpoint_read.go.
var dvFields = []field{
	{name: "storageType", goName: "StorageType", kind: str},
	{name: "pathOrInlineDv", goName: "PathOrInlineDv", kind: str},
	{name: "offset", goName: "Offset", kind: optI32},
	{name: "sizeInBytes", goName: "SizeInBytes", kind: i32},
	{name: "cardinality", goName: "Cardinality", kind: i64},
}

// formatFields are the fields of metaData.format.
var formatFields = []field{
	{name: "provider", goName: "Provider", kind: str},
	{name: "options", goName: "Options", kind: strMap},
}
