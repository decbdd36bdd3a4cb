package txlog

import (
	"slices"
	"strings"

	"github.com/deltakit/deltakit/schema"
)

// Highest protocol versions deltakit implements (spec "Reader Version
// Requirements", "Writer Version Requirements").
const (
	maxReaderVersion = 3
	maxWriterVersion = 7
)

// Table feature names (spec "Valid Feature Names in Table Features").
const (
	FeatureAppendOnly          = "appendOnly"
	FeatureInvariants          = "invariants"
	FeatureCheckConstraints    = "checkConstraints"
	FeatureGeneratedColumns    = "generatedColumns"
	FeatureColumnDefaults      = "allowColumnDefaults"
	FeatureChangeDataFeed      = "changeDataFeed"
	FeatureColumnMapping       = "columnMapping"
	FeatureIdentityColumns     = "identityColumns"
	FeatureDeletionVectors     = "deletionVectors"
	FeatureRowTracking         = "rowTracking"
	FeatureTimestampNTZ        = "timestampNtz"
	FeatureDomainMetadata      = "domainMetadata"
	FeatureV2Checkpoint        = "v2Checkpoint"
	FeatureCatalogManaged      = "catalogManaged"
	FeatureIcebergCompatV1     = "icebergCompatV1"
	FeatureIcebergCompatV2     = "icebergCompatV2"
	FeatureClustering          = "clustering"
	FeatureVacuumProtocolCheck = "vacuumProtocolCheck"
	FeatureInCommitTimestamp   = "inCommitTimestamp"
	FeatureTypeWidening        = "typeWidening"
	FeatureTypeWideningPreview = "typeWidening-preview"
	FeatureVariantType         = "variantType"
	// FeatureCheckpointProtection: log cleanup must keep checkpoints before
	// delta.requireCheckpointProtectionBeforeVersion (delta-spark 4).
	FeatureCheckpointProtection = "checkpointProtection"
)

// Table properties (metaData.configuration keys) that txlog interprets.
const (
	// PropDeletedFileRetentionDuration: how long a remove stays a tombstone
	// (default "interval 1 week").
	PropDeletedFileRetentionDuration = "delta.deletedFileRetentionDuration"
	// PropSetTransactionRetentionDuration: txn actions older than this (by
	// lastUpdated) are expired; unset means never.
	PropSetTransactionRetentionDuration = "delta.setTransactionRetentionDuration"
	// PropLogRetentionDuration: how long log files are kept (default 30 days).
	PropLogRetentionDuration = "delta.logRetentionDuration"
	// PropCheckpointInterval: commits between checkpoints (Spark default 10).
	PropCheckpointInterval = "delta.checkpointInterval"
	// PropEnableInCommitTimestamps: "true" when commit times come from
	// commitInfo.inCommitTimestamp (spec "In-Commit Timestamps").
	PropEnableInCommitTimestamps = "delta.enableInCommitTimestamps"
	// PropInCommitTimestampEnablementVersion: first version with ICT.
	PropInCommitTimestampEnablementVersion = "delta.inCommitTimestampEnablementVersion"
	// PropInCommitTimestampEnablementTimestamp: ICT of that version, in ms.
	PropInCommitTimestampEnablementTimestamp = "delta.inCommitTimestampEnablementTimestamp"
	// PropColumnMappingMode: "none", "name" or "id".
	PropColumnMappingMode = "delta.columnMapping.mode"
	// PropIsolationLevel: "Serializable" or "WriteSerializable" (the
	// default), the isolation level of data-changing commits (Spark's
	// delta.isolationLevel).
	PropIsolationLevel = "delta.isolationLevel"
	// PropAppendOnly: "true" forbids removing data (spec "Append-only Tables").
	PropAppendOnly = "delta.appendOnly"
	// PropEnableChangeDataFeed: "true" when writers must write cdc files for
	// operations that change existing rows.
	PropEnableChangeDataFeed = "delta.enableChangeDataFeed"
	// PropEnableDeletionVectors: "true" when writers may write DVs.
	PropEnableDeletionVectors = "delta.enableDeletionVectors"
	// PropEnableRowTracking: "true" when row tracking is active.
	PropEnableRowTracking = "delta.enableRowTracking"
)

// readerFeatures are the reader features deltakit reads correctly. Column
// mapping and type widening are honoured by the data reader (parquetio/table)
// from the schema metadata; txlog only has to accept them.
func readerFeatureSupported(name string) bool {
	switch name {
	case FeatureTimestampNTZ, FeatureColumnMapping, FeatureDeletionVectors, FeatureV2Checkpoint,
		FeatureVacuumProtocolCheck, FeatureTypeWidening, FeatureTypeWideningPreview:
		return true
	}
	return false
}

// SupportedReaderFeatures returns the reader features deltakit can read, sorted.
func SupportedReaderFeatures() []string {
	return []string{FeatureColumnMapping, FeatureDeletionVectors, FeatureTimestampNTZ,
		FeatureTypeWidening, FeatureTypeWideningPreview, FeatureV2Checkpoint, FeatureVacuumProtocolCheck}
}

// WriterFeatureSupport says what deltakit's commit path does with a
// writer feature.
type WriterFeatureSupport int

const (
	// WriterRefused: deltakit refuses to write a table that supports the
	// feature (CheckWritableTable, before any data file is written).
	WriterRefused WriterFeatureSupport = iota
	// WriterSupported: deltakit writes tables with the feature supported
	// and active, as the spec requires.
	WriterSupported
	// WriterOnlyInactive: deltakit writes tables that support the feature
	// only while it is not active (see CheckWritableTable); an active one
	// is refused by name.
	WriterOnlyInactive
)

// String returns "supported", "only inactive" or "refused".
func (s WriterFeatureSupport) String() string {
	switch s {
	case WriterSupported:
		return "supported"
	case WriterOnlyInactive:
		return "only inactive"
	}
	return "refused"
}

// WriterFeature is one row of WriterFeatures: a writer feature Spark 4.2
// with delta-spark 4.4 can turn on, how deltakit writes it, and why not.
type WriterFeature struct {
	// Name is the feature name (spec "Valid Feature Names in Table
	// Features").
	Name string
	// Property is the table property (or DDL) with which Spark turns the
	// feature on.
	Property string
	// Support is what deltakit does with a table that has the feature.
	Support WriterFeatureSupport
	// Note says how deltakit honours the feature, or why it refuses it
	// (active).
	Note string
}

// writerFeatures is THE table of writer features deltakit knows, one line
// per feature: change a feature's Support here and nothing else. Features
// not listed are refused by name. Tested against tables Spark creates with
// each feature on (table's TestFeatureTable).
var writerFeatures = []WriterFeature{
	{FeatureAppendOnly, "delta.appendOnly=true", WriterSupported, "removes with dataChange are refused (ErrAppendOnly)"},
	{FeatureInvariants, "NOT NULL column / delta.invariants", WriterSupported, "rows are checked before writing"},
	{FeatureCheckConstraints, "delta.constraints.<name>", WriterSupported, "rows are checked before writing"},
	{FeatureGeneratedColumns, "GENERATED ALWAYS AS column", WriterOnlyInactive, "generation expressions are not evaluated"},
	{FeatureColumnDefaults, "delta.feature.allowColumnDefaults=supported + DEFAULT", WriterOnlyInactive, "column defaults are not applied"},
	{FeatureChangeDataFeed, "delta.enableChangeDataFeed=true", WriterSupported, "DELETE, UPDATE and MERGE write cdc files (table/cdf.go)"},
	{FeatureColumnMapping, "delta.columnMapping.mode=name|id", WriterSupported, "physical names and field ids written, ids assigned to new columns; RENAME/DROP COLUMN; mode none to name on an existing table (table/colmap.go)"},
	{FeatureIdentityColumns, "GENERATED ... AS IDENTITY column", WriterOnlyInactive, "identity values are not generated"},
	{FeatureDeletionVectors, "delta.enableDeletionVectors=true", WriterSupported, "DML writes deletion vectors; removes carry the file's DV"},
	{FeatureRowTracking, "delta.enableRowTracking=true", WriterSupported,
		"baseRowId/defaultRowCommitVersion and the delta.rowTracking high-water mark are assigned at commit; " +
			"with row tracking enabled, rows rewritten into new files (copy-on-write, UPDATE, OPTIMIZE) keep their stable ids in the materialized columns"},
	{FeatureTimestampNTZ, "delta.feature.timestampNtz=supported / TIMESTAMP_NTZ column", WriterSupported, ""},
	{FeatureDomainMetadata, "delta.feature.domainMetadata=supported", WriterSupported, "domains are kept as they are"},
	{FeatureV2Checkpoint, "delta.checkpointPolicy=v2", WriterSupported, ""},
	{FeatureVacuumProtocolCheck, "delta.feature.vacuumProtocolCheck=supported", WriterSupported, "vacuum checks the writer protocol"},
	{FeatureInCommitTimestamp, "delta.enableInCommitTimestamps=true", WriterSupported,
		"commitInfo.inCommitTimestamp = max(now, previous + 1 ms) at each commit attempt; enablement version/timestamp set when turned on later"},
	{FeatureClustering, "CLUSTER BY (delta.feature.clustering=supported)", WriterSupported,
		"the delta.clustering domain is kept; writes and OPTIMIZE do not cluster (no clusteringProvider)"},
	{FeatureTypeWidening, "delta.enableTypeWidening=true", WriterSupported, "widened types are read and written as the current schema's"},
	{FeatureTypeWideningPreview, "delta.feature.typeWidening-preview=supported", WriterSupported, "as typeWidening"},
	{FeatureCatalogManaged, "delta.feature.catalogManaged=supported", WriterRefused, "commits must go through the managing catalog"},
	{FeatureIcebergCompatV1, "delta.enableIcebergCompatV1=true", WriterRefused, "Iceberg compatibility writer rules are not implemented"},
	{FeatureIcebergCompatV2, "delta.enableIcebergCompatV2=true", WriterRefused, "Iceberg compatibility writer rules are not implemented"},
	{FeatureVariantType, "delta.feature.variantType=supported / VARIANT column", WriterRefused, "variant values are not written"},
	{FeatureCheckpointProtection, "delta.feature.checkpointProtection=supported", WriterRefused,
		"log cleanup does not honour delta.requireCheckpointProtectionBeforeVersion"},
}

// PropertyTrigger returns the table property and its values that turn the
// feature on (Spark's ALTER TABLE SET TBLPROPERTIES), when Property is a
// "key=value" (or "key=value1|value2") setting; ok is false for features
// turned on by DDL.
func (f WriterFeature) PropertyTrigger() (key string, values []string, ok bool) {
	key, v, ok := strings.Cut(f.Property, "=")
	if !ok || key == "" || v == "" || strings.ContainsAny(f.Property, " <>()") {
		return "", nil, false
	}
	return key, strings.Split(v, "|"), true
}

// WriterFeatures returns the table of writer features deltakit knows, in
// table order (a copy). Features not listed are refused.
func WriterFeatures() []WriterFeature { return slices.Clone(writerFeatures) }

// writerFeatureSupport returns the table's support for a feature: refused
// when the feature is not listed.
func writerFeatureSupport(name string) WriterFeatureSupport {
	for _, f := range writerFeatures {
		if f.Name == name {
			return f.Support
		}
	}
	return WriterRefused
}

// supportedWriterFeatures returns the writer features the deltakit commit
// path accepts at the protocol level (WriterSupported or
// WriterOnlyInactive), sorted. Some of them are accepted only while not
// active on the table: CheckWritableTable checks that.
func supportedWriterFeatures() []string {
	var out []string
	for _, f := range writerFeatures {
		if f.Support != WriterRefused {
			out = append(out, f.Name)
		}
	}
	slices.Sort(out)
	return out
}

// legacyWriterFeatures returns the features implied by a writer version below
// 7 (spec "Writer Version Requirements").
func legacyWriterFeatures(v int32) []string {
	var f []string
	if v >= 2 {
		f = append(f, FeatureAppendOnly, FeatureInvariants)
	}
	if v >= 3 {
		f = append(f, FeatureCheckConstraints)
	}
	if v >= 4 {
		f = append(f, FeatureChangeDataFeed, FeatureGeneratedColumns)
	}
	if v >= 5 {
		f = append(f, FeatureColumnMapping)
	}
	if v >= 6 {
		f = append(f, FeatureIdentityColumns)
	}
	return f
}

// EffectiveWriterFeatures returns the writer features in force: the explicit list for
// writer version 7, the implied legacy features below it.
func (p *Protocol) EffectiveWriterFeatures() []string {
	if p.MinWriterVersion >= 7 {
		return slices.Clone(p.WriterFeatures)
	}
	return legacyWriterFeatures(p.MinWriterVersion)
}

// EffectiveReaderFeatures returns the reader features in force: the explicit
// list for reader version 3, columnMapping for reader version 2, none for 1.
func (p *Protocol) EffectiveReaderFeatures() []string {
	switch {
	case p.MinReaderVersion >= 3:
		return slices.Clone(p.ReaderFeatures)
	case p.MinReaderVersion == 2:
		return []string{FeatureColumnMapping}
	}
	return nil
}

// checkReadable returns nil when deltakit can read a table with protocol p.
// It returns an *UnsupportedProtocolError (ErrUnsupportedProtocol) for a
// reader version above 3 or below 1, and an *UnsupportedFeatureError
// (ErrUnsupportedFeature) naming every reader feature it does not support.
// A reader version above 3 whose feature list names unknown features reports
// the features, so that the user sees their names.
func checkReadable(p *Protocol) error {
	if p == nil {
		return ErrNoProtocol
	}
	var unsupported []string
	for _, f := range p.ReaderFeatures {
		if !readerFeatureSupported(f) && !slices.Contains(unsupported, f) {
			unsupported = append(unsupported, f)
		}
	}
	if p.MinReaderVersion > maxReaderVersion || p.MinReaderVersion < 1 {
		if len(unsupported) > 0 {
			slices.Sort(unsupported)
			return &UnsupportedFeatureError{Features: unsupported, Reader: true}
		}
		return &UnsupportedProtocolError{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: p.MinWriterVersion, Reader: true}
	}
	if p.MinReaderVersion < 3 {
		return nil // legacy: version 2 means column mapping, which is supported; lists are ignored
	}
	if len(unsupported) > 0 {
		slices.Sort(unsupported)
		return &UnsupportedFeatureError{Features: unsupported, Reader: true}
	}
	return nil
}

// checkWritable returns nil when deltakit's commit path may write a table
// with protocol p, judged by the protocol alone: p must be readable
// (checkReadable), the writer version at most 7, and every writer feature
// (explicit, or implied by a legacy writer version) in
// supportedWriterFeatures. Errors are *UnsupportedProtocolError or
// *UnsupportedFeatureError with Reader false. Use CheckWritableTable to also
// refuse features that deltakit accepts only while they are inactive.
func checkWritable(p *Protocol) error {
	if err := checkReadable(p); err != nil {
		return err
	}
	if p.MinWriterVersion > maxWriterVersion || p.MinWriterVersion < 1 {
		return &UnsupportedProtocolError{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: p.MinWriterVersion}
	}
	var unsupported []string
	for _, f := range p.EffectiveWriterFeatures() {
		if writerFeatureSupport(f) == WriterRefused && !slices.Contains(unsupported, f) {
			unsupported = append(unsupported, f)
		}
	}
	if len(unsupported) > 0 {
		slices.Sort(unsupported)
		return &UnsupportedFeatureError{Features: unsupported}
	}
	return nil
}

// CheckWritableTable is checkWritable plus the table's metadata: it also
// refuses, by feature name, the features deltakit accepts only while inactive
// when m activates them: generatedColumns ("delta.generationExpression"), allowColumnDefaults
// ("CURRENT_DEFAULT"), identityColumns ("delta.identity.*") and
// columnMapping (mode other than none).
// Errors are as for checkWritable; a schema that does not parse returns its
// parse error.
func CheckWritableTable(p *Protocol, m *Metadata) error {
	if err := checkWritable(p); err != nil {
		return err
	}
	if m == nil {
		return ErrNoMetadata
	}
	st, err := m.Schema()
	if err != nil {
		return err
	}
	return checkActiveFeatures(p, m, st)
}

// CheckWritableSnapshot is CheckWritableTable of the snapshot's protocol
// and metadata, with the schema the snapshot has already parsed (no parse
// per call: a writer checks it before every commit).
func CheckWritableSnapshot(s *Snapshot) error {
	if s.schema == nil {
		return CheckWritableTable(s.protocol, s.metadata)
	}
	if err := checkWritable(s.protocol); err != nil {
		return err
	}
	return checkActiveFeatures(s.protocol, s.metadata, s.schema)
}

// checkActiveFeatures is the part of CheckWritableTable after the protocol
// check, with the schema of m already parsed.
func checkActiveFeatures(p *Protocol, m *Metadata, st *schema.StructType) error {
	features := p.EffectiveWriterFeatures()
	fieldMeta := map[string]bool{}
	collectFieldMetadataKeys(st, fieldMeta)
	active := map[string]bool{
		FeatureGeneratedColumns: fieldMeta["delta.generationExpression"],
		FeatureColumnDefaults:   fieldMeta["CURRENT_DEFAULT"],
		FeatureIdentityColumns:  fieldMeta["delta.identity.start"] || fieldMeta["delta.identity.step"],
		FeatureColumnMapping:    m.ColumnMappingMode() != "none",
	}
	var unsupported []string
	for _, f := range features {
		if writerFeatureSupport(f) == WriterOnlyInactive && active[f] {
			unsupported = append(unsupported, f)
		}
	}
	if len(unsupported) > 0 {
		slices.Sort(unsupported)
		return &UnsupportedFeatureError{Features: unsupported}
	}
	return nil
}

// collectFieldMetadataKeys records every metadata key of every field, at any
// nesting depth.
func collectFieldMetadataKeys(t schema.Type, keys map[string]bool) {
	schema.WalkFields(t, func(f *schema.StructField) {
		for k := range f.Metadata {
			keys[k] = true
		}
	})
}

// metadataFeatures returns, sorted, the table features that a table with
// schema st and configuration conf (metaData.configuration) uses, and that
// its protocol must therefore support (spec "Table Features"; Spark refuses
// to read a writer-version-7 table whose metadata uses a feature its
// protocol does not list, DELTA_FEATURES_PROTOCOL_METADATA_MISMATCH):
//
//   - invariants: a NOT NULL field (through structs, at any depth, as
//     Spark's Invariants.getFromSchema) or a "delta.invariants" field
//   - appendOnly: delta.appendOnly=true
//   - checkConstraints: any delta.constraints.<name>
//   - changeDataFeed: delta.enableChangeDataFeed=true
//   - generatedColumns, identityColumns, allowColumnDefaults: fields with
//     delta.generationExpression, delta.identity.*, CURRENT_DEFAULT metadata
//   - columnMapping: delta.columnMapping.mode other than none
//   - timestampNtz, variantType: a column of that type, at any depth
//   - every feature whose WriterFeatures Property is a "key=value"
//     setting (deletionVectors, rowTracking with domainMetadata,
//     inCommitTimestamp, typeWidening, icebergCompatV1/V2 by their
//     delta.enable* property true; v2Checkpoint by
//     delta.checkpointPolicy=v2), so that a refused one is refused by name
//   - every <name> of a delta.feature.<name>=supported (or enabled) property.
func metadataFeatures(st *schema.StructType, conf map[string]string) []string {
	set := map[string]bool{}
	isTrue := func(k string) bool { return strings.EqualFold(conf[k], "true") }
	if st != nil {
		if hasNotNull(st) {
			set[FeatureInvariants] = true
		}
		keys := map[string]bool{}
		collectFieldMetadataKeys(st, keys)
		set[FeatureInvariants] = set[FeatureInvariants] || keys["delta.invariants"]
		set[FeatureGeneratedColumns] = keys["delta.generationExpression"]
		set[FeatureIdentityColumns] = keys["delta.identity.start"] || keys["delta.identity.step"] ||
			keys["delta.identity.allowExplicitInsert"]
		set[FeatureColumnDefaults] = keys["CURRENT_DEFAULT"]
		set[FeatureTimestampNTZ] = hasPrimitive(st, schema.TimestampNTZ)
		set[FeatureVariantType] = hasPrimitive(st, "variant")
	}
	// The features writerFeatures turns on by a "key=value" property.
	for _, f := range writerFeatures {
		if key, values, ok := f.PropertyTrigger(); ok && slices.ContainsFunc(values, func(v string) bool {
			return strings.EqualFold(conf[key], v)
		}) {
			set[f.Name] = true
		}
	}
	if isTrue(PropEnableRowTracking) {
		set[FeatureDomainMetadata] = true
	}
	if m := conf[PropColumnMappingMode]; m != "" && !strings.EqualFold(m, "none") {
		set[FeatureColumnMapping] = true
	}
	for k, v := range conf {
		if strings.HasPrefix(k, "delta.constraints.") {
			set[FeatureCheckConstraints] = true
		}
		if name, ok := strings.CutPrefix(k, "delta.feature."); ok && name != "" &&
			(strings.EqualFold(v, "supported") || strings.EqualFold(v, "enabled")) {
			set[name] = true
		}
	}
	var out []string
	for f, on := range set {
		if on {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// ProtocolFor returns the protocol a table needs for schema st and
// configuration conf: UpgradeProtocol(cur, the features of
// metadataFeatures), the protocol supporting every feature the schema and
// configuration use plus, for an existing table (cur not nil), every feature
// cur supports (protocols only grow). Table creation (cur nil), schema
// evolution, property changes and the commit path derive protocols with it.
// For an existing table that needs nothing new, ProtocolFor returns cur
// itself (the same pointer), so callers can tell "no protocol change" by
// identity. See UpgradeProtocol for the form of the result.
func ProtocolFor(cur *Protocol, st *schema.StructType, conf map[string]string) *Protocol {
	return UpgradeProtocol(cur, metadataFeatures(st, conf)...)
}

// CheckWritableProtocol returns nil when deltakit's commit path may write a
// table with protocol p, judged by the protocol and the writer feature
// table (WriterFeatures) alone: p readable, writer version at most 7, and
// no writer feature (explicit or implied) that the table refuses or does
// not list. Errors are *UnsupportedProtocolError or *UnsupportedFeatureError
// (ErrUnsupportedFeature) naming the features. Callers that derive a
// protocol from properties (ProtocolFor) check it with this before writing
// anything; the commit path checks it again (CheckWritableTable).
func CheckWritableProtocol(p *Protocol) error { return checkWritable(p) }

// hasNotNull reports whether a field of st, or of a struct below it (not
// through arrays and maps), is NOT NULL.
func hasNotNull(st *schema.StructType) bool {
	for _, f := range st.Fields {
		if !f.Nullable {
			return true
		}
		if sub, ok := f.Type.(*schema.StructType); ok && hasNotNull(sub) {
			return true
		}
	}
	return false
}

// hasPrimitive reports whether t has a primitive of type name at any depth.
func hasPrimitive(t schema.Type, name string) bool {
	switch t := t.(type) {
	case *schema.PrimitiveType:
		return t.Name == name
	case *schema.StructType:
		for _, f := range t.Fields {
			if hasPrimitive(f.Type, name) {
				return true
			}
		}
	case *schema.ArrayType:
		return hasPrimitive(t.ElementType, name)
	case *schema.MapType:
		return hasPrimitive(t.KeyType, name) || hasPrimitive(t.ValueType, name)
	}
	return false
}
