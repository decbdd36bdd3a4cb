package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// The views below are what commands print: the JSON output is exactly
// these structs (documented in README.md, stable for scripts), and the text
// output formats the same values.

// timeFormat is how every view writes instants: RFC 3339 in UTC with
// milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFormat)
}

func fmtMillis(ms int64) string { return fmtTime(time.UnixMilli(ms)) }

// HistoryView is the output of history.
type HistoryView struct {
	Table   string             `json:"table"`
	Commits []HistoryEntryView `json:"commits"`
	// OldestCommit is the version of the oldest commit file in the log
	// (-1: none left); Cleaned is true when log cleanup removed the
	// commits before it, which the history then lacks.
	OldestCommit int64 `json:"oldestCommit"`
	Cleaned      bool  `json:"cleaned"`
	// LoadError says why the table cannot be loaded (a corrupt commit or
	// checkpoint); absent when it loads.
	LoadError string `json:"loadError,omitempty"`
}

// HistoryEntryView is one commit in HistoryView.
type HistoryEntryView struct {
	Version int64 `json:"version"`
	// Timestamp is the time --timestamp time travel uses (the commit
	// file's modification time made monotonic, or the in-commit
	// timestamp); CommitInfoTimestamp is commitInfo.timestamp ("" if
	// absent).
	Timestamp           string         `json:"timestamp"`
	CommitInfoTimestamp string         `json:"commitInfoTimestamp"`
	Operation           string         `json:"operation"`
	Parameters          map[string]any `json:"parameters"`
	Metrics             map[string]any `json:"metrics"`
	ReadVersion         *int64         `json:"readVersion"`
	IsBlindAppend       *bool          `json:"isBlindAppend"`
	EngineInfo          string         `json:"engineInfo"`
	// File and Error are set when the commit file cannot be read or
	// decoded: its store key and the reason (the other fields are empty).
	File  string `json:"file,omitempty"`
	Error string `json:"error,omitempty"`
}

func historyView(uri string, entries []table.HistoryEntry, oldest int64) *HistoryView {
	v := &HistoryView{Table: uri, Commits: []HistoryEntryView{}, OldestCommit: oldest, Cleaned: oldest != 0}
	for _, e := range entries {
		h := HistoryEntryView{Version: e.Version, Timestamp: fmtTime(e.Timestamp), Operation: e.Operation,
			Parameters: nonNilMap(e.Parameters), Metrics: nonNilMap(e.Metrics), IsBlindAppend: e.IsBlindAppend, EngineInfo: e.EngineInfo}
		if !e.CommitInfoTimestamp.IsZero() {
			h.CommitInfoTimestamp = fmtTime(e.CommitInfoTimestamp)
		}
		h.ReadVersion = knownVersion(e.ReadVersion)
		if e.Err != nil {
			h.File, h.Error = commitFile(e.Version, e.Err), e.Err.Error()
		}
		v.Commits = append(v.Commits, h)
	}
	return v
}

// commitFile is the store key of commit version v that err (reading it)
// names, or the commit key of v when err names none.
func commitFile(v int64, err error) string {
	var ce *table.CorruptLogError
	if errors.As(err, &ce) && ce.File != "" {
		return ce.File
	}
	return table.CommitKey(v)
}

// knownVersion is v as a JSON version field: nil (null) when v is -1 (or
// any negative value: no version).
func knownVersion(v int64) *int64 {
	if v < 0 {
		return nil
	}
	return &v
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// LogView is the output of log: the actions of one commit, as in the
// commit file.
type LogView struct {
	Table   string            `json:"table"`
	Version int64             `json:"version"`
	Actions []json.RawMessage `json:"actions"`
	// Cleaned is true when log cleanup removed the commit file of
	// Version (the latest version, held by a checkpoint): Actions is then
	// empty and Note says so.
	Cleaned bool   `json:"cleaned,omitempty"`
	Note    string `json:"note,omitempty"`
}

// ProtocolView is a protocol action.
type ProtocolView struct {
	MinReaderVersion int32    `json:"minReaderVersion"`
	MinWriterVersion int32    `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures"`
	WriterFeatures   []string `json:"writerFeatures"`
}

func protocolView(p *table.Protocol) ProtocolView {
	return ProtocolView{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: p.MinWriterVersion,
		ReaderFeatures: nonNilStrings(p.EffectiveReaderFeatures()), WriterFeatures: nonNilStrings(p.EffectiveWriterFeatures())}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// FieldView is one top-level column of a schema.
type FieldView struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

func fieldViews(st *schema.StructType) []FieldView {
	out := []FieldView{}
	if st == nil {
		return out
	}
	for _, f := range st.Fields {
		out = append(out, FieldView{Name: f.Name, Type: f.Type.String(), Nullable: f.Nullable})
	}
	return out
}

// SnapshotView is the output of snapshot.
type SnapshotView struct {
	Table            string            `json:"table"`
	Version          int64             `json:"version"`
	Timestamp        string            `json:"timestamp"`
	Protocol         ProtocolView      `json:"protocol"`
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	Description      string            `json:"description"`
	CreatedTime      string            `json:"createdTime"`
	Schema           []FieldView       `json:"schema"`
	PartitionColumns []string          `json:"partitionColumns"`
	Properties       map[string]string `json:"properties"`
	NumFiles         int               `json:"numFiles"`
	SizeBytes        int64             `json:"sizeBytes"`
	// NumRows sums stats.numRecords minus deletion vector cardinalities;
	// FilesWithoutStats counts the files it could not include (no stats, or
	// a count that cannot be right: negative, above 2^53, or more deleted
	// rows than rows).
	NumRows           int64 `json:"numRows"`
	FilesWithoutStats int   `json:"filesWithoutStats"`
	CheckpointVersion int64 `json:"checkpointVersion"`
	Txns              int   `json:"txns"`
}

func snapshotView(uri string, snap *table.Snapshot) *SnapshotView {
	m := snap.Metadata()
	v := &SnapshotView{Table: uri, Version: snap.Version(), Timestamp: fmtTime(snap.CommitTimestamp()),
		Protocol: protocolView(snap.Protocol()), ID: m.ID, Name: m.Name, Description: m.Description,
		Schema:     fieldViews(snap.Schema()),
		Properties: m.Configuration, CheckpointVersion: snap.CheckpointVersion(), Txns: len(snap.Txns())}
	v.PartitionColumns = slices.Clone(m.PartitionColumns)
	if v.PartitionColumns == nil {
		v.PartitionColumns = []string{}
	}
	if v.Properties == nil {
		v.Properties = map[string]string{}
	}
	if m.CreatedTime != nil {
		v.CreatedTime = fmtMillis(*m.CreatedTime)
	}
	for f := range snap.AllFiles() {
		v.NumFiles++
		v.SizeBytes += f.Size
		// A count that cannot be right (negative, above 2^53, more deleted
		// rows than rows) counts as missing, as does one that would
		// overflow the total: the total is never garbage.
		n, ok := f.NumRecords()
		ok = ok && n >= 0 && n <= 1<<53
		if ok && f.DeletionVector != nil {
			c := f.DeletionVector.Cardinality
			ok = c >= 0 && c <= n
			n -= c
		}
		if ok && v.NumRows <= math.MaxInt64-n {
			v.NumRows += n
		} else {
			v.FilesWithoutStats++
		}
	}
	return v
}

// FilesView is the output of files.
type FilesView struct {
	Table   string     `json:"table"`
	Version int64      `json:"version"`
	Files   []FileView `json:"files"`
}

// FileView is one live data file.
type FileView struct {
	Path             string             `json:"path"`
	PartitionValues  map[string]*string `json:"partitionValues"`
	Size             int64              `json:"size"`
	ModificationTime string             `json:"modificationTime"`
	// Rows is stats.numRecords, null without stats.
	Rows *int64 `json:"rows"`
	// DeletedRows is the deletion vector's cardinality, 0 without one.
	DeletedRows int64 `json:"deletedRows"`
	// Min, Max and NullCount are the stats sections, flattened to dotted
	// column names; values are JSON numbers or strings as in the log.
	Min       map[string]any `json:"min"`
	Max       map[string]any `json:"max"`
	NullCount map[string]any `json:"nullCount"`
}

func fileView(f *table.Add, partCols []string) FileView {
	v := FileView{Path: table.DecodePath(f.Path), PartitionValues: map[string]*string{}, Size: f.Size,
		ModificationTime: fmtMillis(f.ModificationTime), Min: map[string]any{}, Max: map[string]any{}, NullCount: map[string]any{}}
	for _, c := range partCols {
		if s, ok := f.PartitionValues[c]; ok && s != "" {
			v.PartitionValues[c] = &s
		} else {
			v.PartitionValues[c] = nil
		}
	}
	if f.DeletionVector != nil {
		v.DeletedRows = f.DeletionVector.Cardinality
	}
	if f.Stats != "" {
		var st struct {
			NumRecords *int64         `json:"numRecords"`
			MinValues  map[string]any `json:"minValues"`
			MaxValues  map[string]any `json:"maxValues"`
			NullCount  map[string]any `json:"nullCount"`
		}
		dec := json.NewDecoder(strings.NewReader(f.Stats))
		dec.UseNumber()
		if dec.Decode(&st) == nil {
			v.Rows = st.NumRecords
			flatten("", st.MinValues, v.Min)
			flatten("", st.MaxValues, v.Max)
			flatten("", st.NullCount, v.NullCount)
		}
	}
	return v
}

func flatten(prefix string, in map[string]any, out map[string]any) {
	for k, val := range in {
		if m, ok := val.(map[string]any); ok {
			flatten(prefix+k+".", m, out)
			continue
		}
		out[prefix+k] = val
	}
}

// SchemaView is the output of schema.
type SchemaView struct {
	Table   string      `json:"table"`
	Version int64       `json:"version"`
	Fields  []FieldView `json:"fields"`
	// Schema is the Delta schema JSON (the metaData schemaString, parsed).
	Schema json.RawMessage `json:"schema"`
	st     *schema.StructType
}

// TxnsView is the output of txn.
type TxnsView struct {
	Table   string     `json:"table"`
	Version int64      `json:"version"`
	Txns    []TxnEntry `json:"txns"`
}

// TxnEntry is one txn action: the latest version of an application.
type TxnEntry struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated string `json:"lastUpdated"`
}

func txnsView(uri string, snap *table.Snapshot) *TxnsView {
	v := &TxnsView{Table: uri, Version: snap.Version(), Txns: []TxnEntry{}}
	txns := snap.Txns()
	for _, id := range slices.Sorted(maps.Keys(txns)) {
		t := txns[id]
		e := TxnEntry{AppID: id, Version: t.Version}
		if t.LastUpdated != nil {
			e.LastUpdated = fmtMillis(*t.LastUpdated)
		}
		v.Txns = append(v.Txns, e)
	}
	return v
}

// CreateView is the output of create.
type CreateView struct {
	Table            string            `json:"table"`
	Version          int64             `json:"version"`
	ID               string            `json:"id"`
	Protocol         ProtocolView      `json:"protocol"`
	Schema           []FieldView       `json:"schema"`
	PartitionColumns []string          `json:"partitionColumns"`
	Properties       map[string]string `json:"properties"`
}

// EpochView is one epoch of a streaming ingest.
type EpochView struct {
	Epoch int64 `json:"epoch"`
	// Status is "committed", "skipped" (the table already held it: the
	// sink's txn check) or "resumed" (committed by an earlier run; the
	// source started after it).
	Status  string `json:"status"`
	Version int64  `json:"version"`
	Rows    int64  `json:"rows"`
	Files   int    `json:"files"`
}

// IngestView is the output of ingest.
type IngestView struct {
	Table   string   `json:"table"`
	Sources []string `json:"sources"`
	Format  string   `json:"format"`
	// Created is true when ingest created the table.
	Created bool        `json:"created"`
	Schema  []FieldView `json:"schema"`
	// Version is the table version after the ingest.
	Version int64 `json:"version"`
	Rows    int64 `json:"rows"`
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
	// QueryID and Epochs are set for a streaming ingest (--epoch-rows).
	QueryID string      `json:"queryId,omitempty"`
	Epochs  []EpochView `json:"epochs,omitempty"`
	// Committed, Skipped and Resumed count Epochs by status.
	Committed int `json:"committedEpochs"`
	Skipped   int `json:"skippedEpochs"`
	Resumed   int `json:"resumedEpochs"`
	// Stopped is true when --max-epochs ended the stream before the input.
	Stopped bool `json:"stopped"`
	// MergeOn, InsertedRows and UpdatedRows are set for an upsert
	// (--merge-on): the key columns and the MERGEs' row counts.
	MergeOn      []string `json:"mergeOn,omitempty"`
	InsertedRows int64    `json:"insertedRows,omitempty"`
	UpdatedRows  int64    `json:"updatedRows,omitempty"`
	// TableRows is, for an upsert, the number of rows the table holds
	// after it (Rows counts the input rows; stats.numRecords minus deleted
	// rows, nil when a file has no row count).
	TableRows *int64 `json:"tableRows,omitempty"`
	// DeadLetterTopic and DeadLetters are set for ingest kafka
	// --dead-letter-topic: the topic and how many records were sent to it.
	DeadLetterTopic string `json:"deadLetterTopic,omitempty"`
	DeadLetters     int64  `json:"deadLetters,omitempty"`
}

// setTableRows sets v.TableRows from snap, the table after an upsert.
func (v *IngestView) setTableRows(uri string, snap *table.Snapshot) {
	if sv := snapshotView(uri, snap); sv.FilesWithoutStats == 0 {
		n := sv.NumRows
		v.TableRows = &n
	}
}

// CheckpointView is the output of checkpoint.
type CheckpointView struct {
	Table   string `json:"table"`
	Version int64  `json:"version"`
	Path    string `json:"path"`
}

// VacuumView is the output of vacuum.
type VacuumView struct {
	Table        string           `json:"table"`
	Version      int64            `json:"version"`
	DryRun       bool             `json:"dryRun"`
	Retention    string           `json:"retention"`
	DeleteBefore string           `json:"deleteBefore"`
	Scanned      int              `json:"scannedFiles"`
	Files        []VacuumFileView `json:"files"`
	NumFiles     int              `json:"numFiles"`
	Bytes        int64            `json:"bytes"`
}

// VacuumFileView is a file vacuum deleted (or would delete).
type VacuumFileView struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime string `json:"modificationTime"`
	// Removed is when a remove action deleted it, "" for a file the log
	// never referenced.
	Removed string `json:"removed"`
}

func vacuumView(uri string, r *table.VacuumResult) *VacuumView {
	v := &VacuumView{Table: uri, Version: r.Version, DryRun: r.DryRun, Retention: r.Retention.String(),
		DeleteBefore: fmtTime(r.DeleteBefore), Scanned: r.Scanned, Files: []VacuumFileView{}, NumFiles: len(r.Files), Bytes: r.Bytes}
	for _, f := range r.Files {
		v.Files = append(v.Files, VacuumFileView{Path: f.Path, Size: f.Size, ModTime: fmtTime(f.ModTime), Removed: fmtTime(f.Removed)})
	}
	return v
}

// OptimizeView is the output of optimize.
type OptimizeView struct {
	Table string `json:"table"`
	// Version is the table version after optimize; Committed is false when
	// there was nothing to compact (no commit was made).
	Version         int64 `json:"version"`
	Committed       bool  `json:"committed"`
	TargetSize      int64 `json:"targetSize"`
	Partitions      int   `json:"partitionsOptimized"`
	FilesRemoved    int   `json:"filesRemoved"`
	FilesAdded      int   `json:"filesAdded"`
	BytesRemoved    int64 `json:"bytesRemoved"`
	BytesAdded      int64 `json:"bytesAdded"`
	Rows            int64 `json:"rows"`
	FilesConsidered int   `json:"filesConsidered"`
}

// VerifyView is the output of verify.
type VerifyView struct {
	Table                string              `json:"table"`
	OK                   bool                `json:"ok"`
	Version              int64               `json:"version"`
	FirstCommit          int64               `json:"firstCommit"`
	LastCommit           int64               `json:"lastCommit"`
	Commits              int                 `json:"commits"`
	Checkpoints          int                 `json:"checkpoints"`
	CheckpointsUnchecked int                 `json:"checkpointsUnchecked"`
	Files                int                 `json:"files"`
	Bytes                int64               `json:"bytes"`
	Problems             []VerifyProblemView `json:"problems"`
}

// VerifyProblemView is one problem verify found.
type VerifyProblemView struct {
	Kind    string `json:"kind"`
	Version *int64 `json:"version"`
	Path    string `json:"path"`
	Detail  string `json:"detail"`
}

func verifyView(uri string, r *table.VerifyReport) *VerifyView {
	v := &VerifyView{Table: uri, OK: r.OK(), Version: r.Version, FirstCommit: r.FirstCommit, LastCommit: r.LastCommit,
		Commits: r.Commits, Checkpoints: r.Checkpoints, CheckpointsUnchecked: r.CheckpointsUnchecked,
		Files: r.Files, Bytes: r.Bytes, Problems: []VerifyProblemView{}}
	for _, p := range r.Problems {
		v.Problems = append(v.Problems, VerifyProblemView{Kind: string(p.Kind), Version: knownVersion(p.Version), Path: p.Path, Detail: p.Detail})
	}
	return v
}

// ExactlyOnceView is the output of verify --exactly-once.
type ExactlyOnceView struct {
	Table       string      `json:"table"`
	OK          bool        `json:"ok"`
	Version     int64       `json:"version"`
	FromVersion int64       `json:"fromVersion"`
	Queries     []QueryView `json:"queries"`
	// Problems are problems of the log itself (a gap, a corrupt commit)
	// that stopped the check; Queries is then empty.
	Problems []VerifyProblemView `json:"problems"`
}

// QueryView is one streaming query (txn appId) in ExactlyOnceView. Epoch
// ranges are "a-b" (inclusive) or "a".
type QueryView struct {
	AppID       string          `json:"appId"`
	OK          bool            `json:"ok"`
	Commits     int             `json:"commits"`
	Base        int64           `json:"baseEpoch"`
	First       int64           `json:"firstEpoch"`
	Last        int64           `json:"lastEpoch"`
	LastVersion int64           `json:"lastVersion"`
	Committed   []string        `json:"committed"`
	Gaps        []string        `json:"gaps"`
	Repeats     []RepeatView    `json:"repeats"`
	Backwards   []BackwardsView `json:"backwards"`
	Mismatches  []string        `json:"mismatches"`
}

// RepeatView is an epoch committed more than once.
type RepeatView struct {
	Epoch    int64   `json:"epoch"`
	Versions []int64 `json:"versions"`
}

// BackwardsView is a commit of an epoch below one committed before.
type BackwardsView struct {
	Version int64 `json:"version"`
	Epoch   int64 `json:"epoch"`
	After   int64 `json:"after"`
}

func exactlyOnceView(uri string, r *table.ExactlyOnceReport) *ExactlyOnceView {
	v := &ExactlyOnceView{Table: uri, OK: r.OK(), Version: r.Version, FromVersion: r.FromVersion, Queries: []QueryView{}, Problems: []VerifyProblemView{}}
	ranges := func(rs []table.EpochRange) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.String())
		}
		return out
	}
	for _, q := range r.Queries {
		qv := QueryView{AppID: q.AppID, OK: q.OK(), Commits: q.Commits, Base: q.Base, First: q.First, Last: q.Last,
			LastVersion: q.LastVersion, Committed: ranges(q.Committed), Gaps: ranges(q.Gaps),
			Repeats: []RepeatView{}, Backwards: []BackwardsView{}, Mismatches: append([]string{}, q.Mismatches...)}
		for _, rp := range q.Repeats {
			qv.Repeats = append(qv.Repeats, RepeatView{Epoch: rp.Epoch, Versions: rp.Versions})
		}
		for _, b := range q.Backwards {
			qv.Backwards = append(qv.Backwards, BackwardsView{Version: b.Version, Epoch: b.Epoch, After: b.After})
		}
		v.Queries = append(v.Queries, qv)
	}
	return v
}

// exactlyOnceLogProblem returns the verify --exactly-once report of a log
// that VerifyExactlyOnce could not read through (a gap, a corrupt commit or
// checkpoint, a truncated log), or nil when err is not such a problem (no
// table, an I/O error).
func exactlyOnceLogProblem(uri string, err error) *ExactlyOnceView {
	kind := table.ProblemLoad
	pv := VerifyProblemView{Detail: err.Error()}
	var ce *table.CorruptLogError
	switch {
	case errors.As(err, &ce):
		pv.Path, pv.Version = ce.File, knownVersion(ce.Version)
		switch {
		case errors.Is(err, table.ErrLogGap):
			kind = table.ProblemLogGap
		case strings.HasSuffix(ce.File, ".json"):
			kind = table.ProblemCorruptCommit
		}
	case errors.Is(err, table.ErrVersionNotFound):
		kind = table.ProblemLogGap
	case errors.Is(err, table.ErrNoMetadata), errors.Is(err, table.ErrNoProtocol):
	default:
		return nil
	}
	pv.Kind = string(kind)
	return &ExactlyOnceView{Table: uri, Version: -1, FromVersion: -1, Queries: []QueryView{}, Problems: []VerifyProblemView{pv}}
}

// VersionView is the output of version.
type VersionView struct {
	Version string `json:"version"`
	// Module and ModuleVersion are the main module's path and version from
	// the build info ("(devel)" for a build from a work tree).
	Module        string `json:"module,omitempty"`
	ModuleVersion string `json:"moduleVersion,omitempty"`
	// Revision, RevisionTime and Modified are the VCS commit the binary
	// was built from, its time and whether the work tree had changes
	// (absent when the build did not record them, as with go test).
	Revision     string `json:"revision,omitempty"`
	RevisionTime string `json:"revisionTime,omitempty"`
	Modified     bool   `json:"modified,omitempty"`
	GoVersion    string `json:"goVersion,omitempty"`
}

// versionView describes this binary from its build info.
func versionView(info *debug.BuildInfo, ok bool) *VersionView {
	v := &VersionView{Version: version}
	if !ok || info == nil {
		return v
	}
	v.Module, v.ModuleVersion, v.GoVersion = info.Main.Path, info.Main.Version, info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.RevisionTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one-line description of the version.
func (v *VersionView) String() string {
	s := "deltactl " + v.Version
	var parts []string
	if v.Module != "" {
		parts = append(parts, strings.TrimSpace(v.Module+" "+v.ModuleVersion))
	}
	if v.Revision != "" {
		r := "commit " + v.Revision
		if v.RevisionTime != "" {
			r += " (" + v.RevisionTime + ")"
		}
		if v.Modified {
			r += ", modified"
		}
		parts = append(parts, r)
	}
	if v.GoVersion != "" {
		parts = append(parts, v.GoVersion)
	}
	if len(parts) > 0 {
		s += " [" + strings.Join(parts, "; ") + "]"
	}
	return s
}

// CleanupView is the output of cleanup.
type CleanupView struct {
	Table    string   `json:"table"`
	DryRun   bool     `json:"dryRun"`
	KeepFrom int64    `json:"keepFrom"`
	Deleted  []string `json:"deleted"`
}

// indentJSON pretty-prints raw JSON with two spaces.
func indentJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// humanBytes formats a byte count with go-humanize's IEC units, three
// significant digits: "512 B", "1.5 KiB", "12 MiB", "130 GiB".
func humanBytes(n int64) string {
	return humanize.IBytes(uint64(max(n, 0)))
}
