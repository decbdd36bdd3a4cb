package txlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/deltakit/deltakit/internal/jsonerr"
	"github.com/deltakit/deltakit/schema"
)

// Protocol is the protocol action (spec "Protocol Evolution"): the reader and
// writer versions a client must implement, and from reader version 3 / writer
// version 7 on the lists of table features.
type Protocol struct {
	MinReaderVersion int32
	MinWriterVersion int32
	// ReaderFeatures is written when MinReaderVersion is 3 (as [] when
	// empty) or when non-nil.
	ReaderFeatures []string
	// WriterFeatures is written when MinWriterVersion is 7 (as [] when
	// empty) or when non-nil.
	WriterFeatures []string
}

type protocolJSON struct {
	MinReaderVersion int32    `json:"minReaderVersion"`
	MinWriterVersion int32    `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitzero"`
	WriterFeatures   []string `json:"writerFeatures,omitzero"`
}

// MarshalJSON writes the protocol with both versions always present and the
// feature lists present when the versions call for them.
func (p Protocol) MarshalJSON() ([]byte, error) {
	j := protocolJSON(p)
	if j.ReaderFeatures == nil && p.MinReaderVersion == 3 {
		j.ReaderFeatures = []string{}
	}
	if j.WriterFeatures == nil && p.MinWriterVersion == 7 {
		j.WriterFeatures = []string{}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a protocol action; unknown fields are ignored.
func (p *Protocol) UnmarshalJSON(data []byte) error {
	var j protocolJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*p = Protocol(j)
	return nil
}

// HasReaderFeature reports whether name is listed in ReaderFeatures.
func (p *Protocol) HasReaderFeature(name string) bool {
	return p != nil && slices.Contains(p.ReaderFeatures, name)
}

// HasWriterFeature reports whether name is listed in WriterFeatures.
func (p *Protocol) HasWriterFeature(name string) bool {
	return p != nil && slices.Contains(p.WriterFeatures, name)
}

// Clone returns a deep copy.
func (p *Protocol) Clone() *Protocol {
	if p == nil {
		return nil
	}
	c := *p
	c.ReaderFeatures = slices.Clone(p.ReaderFeatures)
	c.WriterFeatures = slices.Clone(p.WriterFeatures)
	return &c
}

// Format is the metaData format struct (spec "Format Specification").
// Provider is "parquet" for every table deltakit writes.
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// MarshalJSON writes options as {} when nil: the field is required.
func (f Format) MarshalJSON() ([]byte, error) {
	type plain Format
	if f.Options == nil {
		f.Options = map[string]string{}
	}
	return json.Marshal(plain(f))
}

// Metadata is the metaData action (spec "Change Metadata"). The latest one in
// the log wins. Use Schema to parse SchemaString.
type Metadata struct {
	// ID is the table's unique id (a UUID string).
	ID string `json:"id"`
	// Name and Description are optional; empty means absent.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Format      Format `json:"format"`
	// SchemaString is the table schema as Spark StructType JSON (spec
	// "Schema Serialization Format").
	SchemaString string `json:"schemaString"`
	// PartitionColumns are the partition column names, in order; written as
	// [] when nil.
	PartitionColumns []string `json:"partitionColumns"`
	// Configuration holds the table properties ("delta.appendOnly", ...);
	// written as {} when nil.
	Configuration map[string]string `json:"configuration"`
	// CreatedTime is the creation time in milliseconds since the Unix epoch,
	// or nil when absent.
	CreatedTime *int64 `json:"createdTime,omitempty"`
}

// MarshalJSON writes every required field, also when empty.
func (m Metadata) MarshalJSON() ([]byte, error) {
	type plain Metadata
	if m.PartitionColumns == nil {
		m.PartitionColumns = []string{}
	}
	if m.Configuration == nil {
		m.Configuration = map[string]string{}
	}
	return json.Marshal(plain(m))
}

// Schema parses SchemaString. Each call parses again: a Snapshot keeps the
// parsed schema, so prefer Snapshot.Schema. An absent (empty) schemaString
// is the empty struct, as Spark reads it (Delta Live Tables write such a
// version 0). Errors wrap schema.ErrInvalidSchema.
func (m *Metadata) Schema() (*schema.StructType, error) {
	if strings.TrimSpace(m.SchemaString) == "" {
		return schema.NewStruct(), nil
	}
	return schema.Parse(m.SchemaString)
}

// ColumnMappingMode returns the table property "delta.columnMapping.mode":
// "none" (also when unset), "name" or "id" (spec "Column Mapping").
func (m *Metadata) ColumnMappingMode() string {
	if v, ok := m.Configuration[PropColumnMappingMode]; ok && v != "" {
		return v
	}
	return "none"
}

// AppendOnly reports whether the table property "delta.appendOnly" is
// "true" (case-insensitive; spec "Append-only Tables").
func (m *Metadata) AppendOnly() bool {
	return m != nil && strings.EqualFold(m.Configuration[PropAppendOnly], "true")
}

// Clone returns a deep copy.
func (m *Metadata) Clone() *Metadata {
	if m == nil {
		return nil
	}
	c := *m
	c.Format.Options = maps.Clone(m.Format.Options)
	c.PartitionColumns = slices.Clone(m.PartitionColumns)
	c.Configuration = maps.Clone(m.Configuration)
	if m.CreatedTime != nil {
		t := *m.CreatedTime
		c.CreatedTime = &t
	}
	return &c
}

// DeletionVectorDescriptor locates a deletion vector (spec "Deletion Vector
// Descriptor Schema").
type DeletionVectorDescriptor struct {
	// StorageType is 'u' (relative path from a UUID), 'i' (inline) or 'p'
	// (absolute path).
	StorageType string `json:"storageType"`
	// PathOrInlineDv is the z85 UUID with optional prefix ('u'), the z85
	// encoded bitmap ('i') or the URI-encoded absolute path ('p').
	PathOrInlineDv string `json:"pathOrInlineDv"`
	// Offset is the byte offset of the DV in its file; nil for inline DVs
	// (read as 0 when nil for the other storage types).
	Offset *int32 `json:"offset,omitempty"`
	// SizeInBytes is the size of the serialized DV in bytes (before z85
	// encoding when inline).
	SizeInBytes int32 `json:"sizeInBytes"`
	// Cardinality is the number of rows the DV deletes.
	Cardinality int64 `json:"cardinality"`
}

// UniqueID returns the DV's unique id (spec "Derived Fields"):
// storageType + pathOrInlineDv, followed by "@offset" when an offset is set.
// A nil descriptor has the unique id "".
func (dv *DeletionVectorDescriptor) UniqueID() string {
	if dv == nil {
		return ""
	}
	if dv.Offset == nil {
		return dv.StorageType + dv.PathOrInlineDv
	}
	return dv.StorageType + dv.PathOrInlineDv + "@" + strconv.FormatInt(int64(*dv.Offset), 10)
}

// Add is the add action (spec "Add File and Remove File"). PartitionValues
// maps every partition column to its serialized value; "" means null (spec
// "Partition Value Serialization") and is written as JSON null.
type Add struct {
	// Path is the URI-encoded (RFC 2396) path of the data file, relative to
	// the table root or absolute.
	Path            string          `json:"path"`
	PartitionValues PartitionValues `json:"partitionValues"`
	// Size is the file size in bytes.
	Size int64 `json:"size"`
	// ModificationTime is in milliseconds since the Unix epoch.
	ModificationTime int64 `json:"modificationTime"`
	DataChange       bool  `json:"dataChange"`
	// Stats is the per-file statistics JSON (spec "Per-file Statistics"),
	// "" when absent. Replay never parses it.
	Stats          string                    `json:"stats,omitempty"`
	Tags           map[string]string         `json:"tags,omitempty"`
	DeletionVector *DeletionVectorDescriptor `json:"deletionVector,omitempty"`
	// BaseRowID and DefaultRowCommitVersion belong to row tracking (spec
	// "Row Tracking"); nil when absent.
	BaseRowID               *int64 `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64 `json:"defaultRowCommitVersion,omitempty"`
	// ClusteringProvider names the clustering implementation, "" if none.
	ClusteringProvider string `json:"clusteringProvider,omitempty"`
}

// MarshalJSON writes the fields in the spec's order (the struct's),
// partitionValues always ({} when nil) with "" as null.
func (a Add) MarshalJSON() ([]byte, error) {
	type plain Add
	return json.Marshal(plain(a))
}

// NumRecords returns stats.numRecords, and false when the stats are absent,
// lack numRecords or are not valid JSON. It parses Stats on every call.
func (a *Add) NumRecords() (int64, bool) { return statsNumRecords(a.Stats) }

// Key returns the file's reconciliation key: the URI-decoded path and the
// deletion vector's unique id (spec "Action Reconciliation").
func (a *Add) Key() FileKey { return newFileKey(a.Path, a.DeletionVector) }

// Remove is the remove action (spec "Add File and Remove File"). It stays in
// the snapshot as a tombstone until DeletionTimestamp plus
// "delta.deletedFileRetentionDuration" has passed.
type Remove struct {
	// Path is the URI-encoded path, as in Add.Path.
	Path string `json:"path"`
	// DeletionTimestamp is in milliseconds since the Unix epoch; nil when
	// absent.
	DeletionTimestamp *int64 `json:"deletionTimestamp,omitempty"`
	DataChange        bool   `json:"dataChange"`
	// ExtendedFileMetadata true means PartitionValues and Size are present.
	ExtendedFileMetadata *bool `json:"extendedFileMetadata,omitempty"`
	// PartitionValues is nil when absent ("" values mean null).
	PartitionValues PartitionValues `json:"partitionValues,omitzero"`
	// Size is the file size in bytes, nil when absent.
	Size                    *int64                    `json:"size,omitempty"`
	Stats                   string                    `json:"stats,omitempty"`
	Tags                    map[string]string         `json:"tags,omitempty"`
	DeletionVector          *DeletionVectorDescriptor `json:"deletionVector,omitempty"`
	BaseRowID               *int64                    `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64                    `json:"defaultRowCommitVersion,omitempty"`
}

// MarshalJSON writes the fields in the spec's order (the struct's),
// partitionValues when non-nil, with "" as null.
func (r Remove) MarshalJSON() ([]byte, error) {
	type plain Remove
	return json.Marshal(plain(r))
}

// Key returns the file's reconciliation key, as Add.Key.
func (r *Remove) Key() FileKey { return newFileKey(r.Path, r.DeletionVector) }

// AddCDCFile is the cdc action (spec "Add CDC File"): a change data file for
// change data feed readers. It does not change the table's files.
type AddCDCFile struct {
	Path            string          `json:"path"`
	PartitionValues PartitionValues `json:"partitionValues"`
	// Size is in bytes.
	Size       int64             `json:"size"`
	DataChange bool              `json:"dataChange"`
	Tags       map[string]string `json:"tags,omitempty"`
}

// MarshalJSON writes the fields in the spec's order (the struct's),
// partitionValues always ({} when nil) with "" as null.
func (c AddCDCFile) MarshalJSON() ([]byte, error) {
	type plain AddCDCFile
	return json.Marshal(plain(c))
}

// Txn is the txn action (spec "Transaction Identifiers"): the latest
// application-specific version per AppID.
type Txn struct {
	AppID   string `json:"appId"`
	Version int64  `json:"version"`
	// LastUpdated is in milliseconds since the Unix epoch; nil when absent.
	// Writers should always set it.
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// DomainMetadata is the domainMetadata action (spec "Domain Metadata").
type DomainMetadata struct {
	Domain        string `json:"domain"`
	Configuration string `json:"configuration"`
	// Removed true makes the action a tombstone for the domain.
	Removed bool `json:"removed"`
}

// CheckpointMetadata is the checkpointMetadata action of v2 checkpoints
// (spec "Checkpoint Metadata"). It never appears in commits.
type CheckpointMetadata struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// Sidecar is the sidecar action of v2 checkpoints (spec "Sidecar File
// Information"): a Parquet file under "_delta_log/_sidecars/" holding file
// actions.
type Sidecar struct {
	// Path is the URI-encoded file name (or path) of the sidecar.
	Path string `json:"path"`
	// SizeInBytes is the file size in bytes.
	SizeInBytes int64 `json:"sizeInBytes"`
	// ModificationTime is in milliseconds since the Unix epoch.
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// CommitInfo is the free-form commitInfo action (spec "Commit Provenance
// Information"). Known fields are typed; every other field is kept verbatim
// in Extra so that a decoded commitInfo encodes back without loss.
//
// JSON numbers inside OperationParameters, OperationMetrics and Extra values
// decode as json.Number. OperationParameters values are usually strings, but
// readers must tolerate any JSON value there.
type CommitInfo struct {
	// Timestamp is the writer's clock at commit, in milliseconds since the
	// Unix epoch; 0 when absent.
	Timestamp int64
	// InCommitTimestamp is the in-commit timestamp (spec "In-Commit
	// Timestamps") in milliseconds since the Unix epoch; nil when absent.
	InCommitTimestamp   *int64
	Operation           string
	OperationParameters map[string]any
	OperationMetrics    map[string]any
	// IsBlindAppend is nil when absent.
	IsBlindAppend *bool
	// TxnID is the unique id of this commit attempt, "" when absent.
	TxnID      string
	EngineInfo string
	// Extra holds all other fields as raw JSON.
	Extra map[string]json.RawMessage
}

// MarshalJSON writes the typed fields that are set, then Extra sorted by key
// (an Extra key is skipped when the typed field of that name was written).
// Values are written as json.Encoder writes them with HTML escaping off.
func (c CommitInfo) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 384)
	b = append(b, '{')
	var scratch bytes.Buffer
	enc := json.NewEncoder(&scratch)
	enc.SetEscapeHTML(false)
	var err error
	// value appends the JSON of v (compact, no trailing newline).
	value := func(k string, v any) {
		if err != nil {
			return
		}
		scratch.Reset()
		if e := enc.Encode(v); e != nil {
			err = fmt.Errorf("commitInfo.%s: %w", k, e)
			return
		}
		b = append(b, bytes.TrimRight(scratch.Bytes(), "\n")...)
	}
	key := func(quoted string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, quoted...)
		b = append(b, ':')
	}
	if c.Timestamp != 0 {
		key(`"timestamp"`)
		b = strconv.AppendInt(b, c.Timestamp, 10)
	}
	if c.InCommitTimestamp != nil {
		key(`"inCommitTimestamp"`)
		b = strconv.AppendInt(b, *c.InCommitTimestamp, 10)
	}
	if c.Operation != "" {
		key(`"operation"`)
		value("operation", c.Operation)
	}
	if c.OperationParameters != nil {
		key(`"operationParameters"`)
		value("operationParameters", c.OperationParameters)
	}
	if c.OperationMetrics != nil {
		key(`"operationMetrics"`)
		value("operationMetrics", c.OperationMetrics)
	}
	if c.IsBlindAppend != nil {
		key(`"isBlindAppend"`)
		b = strconv.AppendBool(b, *c.IsBlindAppend)
	}
	if c.TxnID != "" {
		key(`"txnId"`)
		value("txnId", c.TxnID)
	}
	if c.EngineInfo != "" {
		key(`"engineInfo"`)
		value("engineInfo", c.EngineInfo)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Extra)) {
		if c.typedFieldSet(k) {
			continue // the typed field wins
		}
		if plainKey(k) {
			key(`"` + k + `"`)
		} else {
			// As before: json.Marshal escapes <, > and & in keys.
			kq, e := json.Marshal(k)
			if e != nil && err == nil {
				err = fmt.Errorf("commitInfo key %q: %w", k, e)
			}
			key(string(kq))
		}
		value(k, c.Extra[k])
	}
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// plainKey reports whether k is written as is between quotes in JSON: ASCII
// letters, digits, '_', '-' and '.' only.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// typedFieldSet reports whether MarshalJSON writes the typed field named k.
func (c *CommitInfo) typedFieldSet(k string) bool {
	switch k {
	case "timestamp":
		return c.Timestamp != 0
	case "inCommitTimestamp":
		return c.InCommitTimestamp != nil
	case "operation":
		return c.Operation != ""
	case "operationParameters":
		return c.OperationParameters != nil
	case "operationMetrics":
		return c.OperationMetrics != nil
	case "isBlindAppend":
		return c.IsBlindAppend != nil
	case "txnId":
		return c.TxnID != ""
	case "engineInfo":
		return c.EngineInfo != ""
	}
	return false
}

// UnmarshalJSON reads any JSON object. A known field whose value has an
// unexpected type is kept in Extra instead of failing the whole commit.
func (c *CommitInfo) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*c = CommitInfo{}
	for k, v := range raw {
		var err error
		switch k {
		case "timestamp":
			err = unmarshalNumber(v, &c.Timestamp)
		case "inCommitTimestamp":
			var t int64
			if err = unmarshalNumber(v, &t); err == nil && !isNull(v) {
				c.InCommitTimestamp = &t
			}
		case "operation":
			err = json.Unmarshal(v, &c.Operation)
		case "operationParameters":
			err = unmarshalUseNumber(v, &c.OperationParameters)
		case "operationMetrics":
			err = unmarshalUseNumber(v, &c.OperationMetrics)
		case "isBlindAppend":
			var b *bool
			if err = json.Unmarshal(v, &b); err == nil {
				c.IsBlindAppend = b
			}
		case "txnId":
			err = json.Unmarshal(v, &c.TxnID)
		case "engineInfo":
			err = json.Unmarshal(v, &c.EngineInfo)
		default:
			err = errKeepRaw
		}
		if err != nil {
			if c.Extra == nil {
				c.Extra = map[string]json.RawMessage{}
			}
			c.Extra[k] = slices.Clone(v)
		}
	}
	return nil
}

var errKeepRaw = errors.New("keep raw")

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// unmarshalNumber reads an integer that may be written as 123 or 123.0.
func unmarshalNumber(v json.RawMessage, dst *int64) error {
	if isNull(v) {
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err != nil {
		return err
	}
	if i, err := n.Int64(); err == nil {
		*dst = i
		return nil
	}
	f, err := n.Float64()
	if err != nil {
		return err
	}
	*dst = int64(f)
	return nil
}

func unmarshalUseNumber(v json.RawMessage, dst any) error {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	return d.Decode(dst)
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Action is one line of a commit file: exactly one of its fields is set, as
// in {"add":{...}}. A line holding an action type this package does not know
// decodes to an Action with every field nil (decodeCommit drops it).
type Action struct {
	CommitInfo         *CommitInfo         `json:"commitInfo,omitempty"`
	Protocol           *Protocol           `json:"protocol,omitempty"`
	Metadata           *Metadata           `json:"metaData,omitempty"`
	Add                *Add                `json:"add,omitempty"`
	Remove             *Remove             `json:"remove,omitempty"`
	Txn                *Txn                `json:"txn,omitempty"`
	CDC                *AddCDCFile         `json:"cdc,omitempty"`
	DomainMetadata     *DomainMetadata     `json:"domainMetadata,omitempty"`
	CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata,omitempty"`
	Sidecar            *Sidecar            `json:"sidecar,omitempty"`
}

// kinds returns how many fields are set.
func (a *Action) kinds() int {
	n, _ := a.setFields()
	return n
}

// kind returns the JSON key of the action ("add", "metaData", ...), or "" for
// an action with no field set.
func (a *Action) kind() string {
	_, key := a.setFields()
	return key
}

// setFields returns how many fields of a are set and the JSON key of the
// first one set, in field order ("" when none is): the one list of Action's
// fields that kinds and Kind read.
func (a *Action) setFields() (n int, first string) {
	for _, f := range [...]struct {
		set bool
		key string
	}{
		{a.CommitInfo != nil, "commitInfo"},
		{a.Protocol != nil, "protocol"},
		{a.Metadata != nil, "metaData"},
		{a.Add != nil, "add"},
		{a.Remove != nil, "remove"},
		{a.Txn != nil, "txn"},
		{a.CDC != nil, "cdc"},
		{a.DomainMetadata != nil, "domainMetadata"},
		{a.CheckpointMetadata != nil, "checkpointMetadata"},
		{a.Sidecar != nil, "sidecar"},
	} {
		if f.set {
			if n == 0 {
				first = f.key
			}
			n++
		}
	}
	return n, first
}

// validate checks the required fields that replay depends on.
func (a *Action) validate() error {
	switch {
	case a.Add != nil && a.Add.Path == "":
		return errors.New("add action without path")
	case a.Remove != nil && a.Remove.Path == "":
		return errors.New("remove action without path")
	case a.Txn != nil && a.Txn.AppID == "":
		return errors.New("txn action without appId")
	case a.DomainMetadata != nil && a.DomainMetadata.Domain == "":
		return errors.New("domainMetadata action without domain")
	case a.CDC != nil && a.CDC.Path == "":
		return errors.New("cdc action without path")
	case a.Sidecar != nil && a.Sidecar.Path == "":
		return errors.New("sidecar action without path")
	}
	for _, dv := range []*DeletionVectorDescriptor{addDV(a.Add), removeDV(a.Remove)} {
		if dv != nil && dv.StorageType != "u" && dv.StorageType != "i" && dv.StorageType != "p" {
			return fmt.Errorf("deletion vector with unknown storageType %q", dv.StorageType)
		}
	}
	return nil
}

func addDV(a *Add) *DeletionVectorDescriptor {
	if a == nil {
		return nil
	}
	return a.DeletionVector
}

func removeDV(r *Remove) *DeletionVectorDescriptor {
	if r == nil {
		return nil
	}
	return r.DeletionVector
}

var commitInfoPrefix = []byte(`{"commitInfo":`)

// decodeCommit parses the newline-delimited JSON of commit file version into
// its actions, in file order. Blank lines and unknown action types are
// skipped; unknown fields are ignored. It returns a *CorruptLogError
// (ErrCorruptLog) for an empty file, a line that is not a JSON object,
// truncated JSON, a field of the wrong type, or an add/remove without path.
// It never panics. With keepCommitInfo false it only checks that
// lines starting with {"commitInfo": are valid JSON and drops them (replay
// needs the commitInfo of the snapshot's own version only).
func decodeCommit(version int64, data []byte, keepCommitInfo bool) ([]Action, error) {
	file := CommitKey(version)
	if version < 0 {
		file = ""
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, corrupt(file, version, nil, "empty commit file (%d bytes)", len(data))
	}
	actions := make([]Action, 0, bytes.Count(data, []byte{'\n'})+1)
	lineNo := 0
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		lineNo++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' {
			return nil, corrupt(file, version, nil, "line %d is not a JSON object", lineNo)
		}
		if !keepCommitInfo && bytes.HasPrefix(line, commitInfoPrefix) {
			if !json.Valid(line) {
				if len(data) == 0 {
					return nil, corrupt(file, version, nil, "truncated or invalid JSON on line %d (last line)", lineNo)
				}
				return nil, corrupt(file, version, nil, "invalid action on line %d", lineNo)
			}
			continue
		}
		var a Action
		if err := json.Unmarshal(line, &a); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) && len(data) == 0 {
				return nil, corrupt(file, version, err, "truncated or invalid JSON on line %d (last line)", lineNo)
			}
			return nil, corrupt(file, version, jsonerr.Describe(err), "invalid action on line %d", lineNo)
		}
		switch a.kinds() {
		case 0:
			continue // unknown action type: ignored (spec "Protocol Evolution")
		case 1:
		default:
			return nil, corrupt(file, version, nil, "line %d holds %d actions", lineNo, a.kinds())
		}
		if err := a.validate(); err != nil {
			return nil, corrupt(file, version, err, "invalid action on line %d", lineNo)
		}
		actions = append(actions, a)
	}
	return actions, nil
}

// EncodeCommit encodes actions as a commit file: one JSON object per line,
// each line ending in "\n", commitInfo actions first and the others in the
// given order. Required fields are always written (dataChange false, version
// 0, empty maps); optional ones only when set. It returns an error for an
// Action with no field or more than one field set.
func EncodeCommit(actions []Action) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(256 * len(actions))
	var enc *json.Encoder // for the action types without a MarshalJSON method
	for pass := range 2 {
		for i := range actions {
			a := &actions[i]
			if n := a.kinds(); n != 1 {
				return nil, fmt.Errorf("txlog: EncodeCommit: action %d has %d fields set, want exactly 1", i, n)
			}
			if (a.CommitInfo != nil) != (pass == 0) {
				continue
			}
			raw, err := a.marshalValue()
			if err == nil && raw == nil {
				if enc == nil {
					enc = json.NewEncoder(&b)
					enc.SetEscapeHTML(false)
				}
				err = enc.Encode(a)
			} else if err == nil {
				b.WriteString(`{"`)
				b.WriteString(a.kind())
				b.WriteString(`":`)
				b.Write(raw)
				b.WriteString("}\n")
			}
			if err != nil {
				return nil, fmt.Errorf("txlog: EncodeCommit: action %d (%s): %w", i, a.kind(), err)
			}
		}
	}
	return b.Bytes(), nil
}

// marshalValue returns the JSON of the action's value when its type has a
// MarshalJSON method (commitInfo, add, remove, protocol, metaData), nil
// otherwise. Those methods return compact JSON, so {"kind":value} is the
// line json.Encoder would write, without its reflection over Action and its
// second pass over the value (encoding/json compacts the output of every
// MarshalJSON).
func (a *Action) marshalValue() ([]byte, error) {
	switch {
	case a.CommitInfo != nil:
		return a.CommitInfo.MarshalJSON()
	case a.Add != nil:
		return a.Add.MarshalJSON()
	case a.Remove != nil:
		return a.Remove.MarshalJSON()
	case a.Protocol != nil:
		return a.Protocol.MarshalJSON()
	case a.Metadata != nil:
		return a.Metadata.MarshalJSON()
	}
	return nil, nil
}

// PartitionValues maps each partition column of a file action to its
// serialized value (spec "Partition Value Serialization"); "" means null.
// It is written as a JSON object with keys sorted (as encoding/json writes
// maps), "" values as null and a nil map as {}; reading takes null as "".
type PartitionValues map[string]string

// MarshalJSON writes pv with "" as null and nil as {}, keys sorted, in
// the bytes json.Marshal writes for a map[string]*string.
func (pv PartitionValues) MarshalJSON() ([]byte, error) {
	if len(pv) == 0 {
		return []byte("{}"), nil
	}
	var kb [8]string // on the stack for up to 8 partition columns
	keys := kb[:0]
	for k := range pv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := make([]byte, 0, 16*len(keys))
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMarshaledString(b, k)
		b = append(b, ':')
		if v := pv[k]; v == "" {
			b = append(b, "null"...)
		} else {
			b = appendMarshaledString(b, v)
		}
	}
	return append(b, '}'), nil
}

// appendMarshaledString appends s as json.Marshal writes it (HTML
// characters escaped, unlike appendJSONString): directly when s is
// printable ASCII that needs no escaping, through json.Marshal otherwise.
func appendMarshaledString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// statsNumRecords extracts numRecords from a stats JSON string without
// decoding the rest.
func statsNumRecords(stats string) (int64, bool) {
	if stats == "" {
		return 0, false
	}
	var s struct {
		NumRecords *json.Number `json:"numRecords"`
	}
	if err := json.Unmarshal([]byte(stats), &s); err != nil || s.NumRecords == nil {
		return 0, false
	}
	n, err := s.NumRecords.Int64()
	if err != nil {
		f, ferr := s.NumRecords.Float64()
		if ferr != nil {
			return 0, false
		}
		n = int64(f)
	}
	return n, true
}
