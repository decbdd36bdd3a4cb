package txlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/parquetio"
)

// This file decodes checkpoint Parquet files row by row on the file's own
// schema: every leaf column the reader knows (by its path, e.g.
// add.partitionValues.key_value.key) gets a small setter, every other column
// (future fields) is skipped; add.stats_parsed and add.partitionValues_parsed
// are used where the JSON forms are absent (checkpoint_parsed.go). This
// avoids both reflection and schema conversion, which made the generic
// struct reader three times slower on 100,000-file checkpoints, and it
// tolerates the schema variants of Spark, Databricks and delta-rs (int32 or
// int64 integers, missing optional columns, any names of the repeated groups
// of maps and lists).

// top-level action columns
const (
	colTxn = iota
	colAdd
	colRemove
	colMetaData
	colProtocol
	colDomainMetadata
	colCheckpointMetadata
	colSidecar
	numTopColumns
)

var topColumnIndex = map[string]int{
	"txn": colTxn, "add": colAdd, "remove": colRemove, "metaData": colMetaData, "protocol": colProtocol,
	"domainMetadata": colDomainMetadata, "checkpointMetadata": colCheckpointMetadata, "sidecar": colSidecar,
}

// rowAsm assembles the actions of one checkpoint row.
type rowAsm struct {
	present [numTopColumns]bool
	add     Add
	addDV   DeletionVectorDescriptor
	hasADV  bool
	remove  Remove
	remDV   DeletionVectorDescriptor
	hasRDV  bool
	meta    Metadata
	proto   Protocol
	txn     Txn
	domain  DomainMetadata
	cpMeta  CheckpointMetadata
	sidecar Sidecar
	// add.path and add.stats, valid until the next ReadRows: emit copies
	// both into one allocation (they live and die together).
	addPath, addStats []byte
	// out is the action passed to emit's callback, reused from row to row
	// (the callback must not keep it).
	out Action
	// maps and lists under construction, by slot
	keys   [numMapSlots][]string
	vals   [numMapSlots][]string
	hasMap [numMapSlots]bool
	lists  [numListSlots][]string
	hasLst [numListSlots]bool
	err    error
	// intern shares the strings of map keys and values, which repeat from
	// row to row (partition column names and values).
	intern map[string]string
	// maps shares identical partitionValues maps between rows (files of
	// one partition); mapKey is scratch space for its keys.
	maps   map[string]map[string]string
	mapKey []byte
	// add.stats_parsed and add.partitionValues_parsed values of the row
	// (checkpoint_parsed.go); statsBuf holds stats JSON built from them.
	statsParsed, pvParsed       []parsedVal
	hasStatsParsed, hasPVParsed bool
	statsBuf                    []byte
	// seg, when set, receives the row's add action (packed from the row's
	// bytes, without an *Add) instead of the emit callback.
	seg *packSeg
}

// internString returns v's bytes as a string, shared with earlier equal
// strings of the same decoder while the table is small.
func (a *rowAsm) internString(v parquet.Value) string {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
	default:
		a.fail("string column holds %s", v.Kind())
		return ""
	}
	b := v.ByteArray()
	if s, ok := a.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if a.intern == nil {
		a.intern = map[string]string{}
	}
	if len(a.intern) < 4096 {
		a.intern[s] = s
	}
	return s
}

// map and list slots
const (
	mapAddPartitionValues = iota
	mapAddTags
	mapRemovePartitionValues
	mapMetaConfiguration
	mapMetaFormatOptions
	mapCheckpointMetadataTags
	mapSidecarTags
	numMapSlots
)

const (
	listPartitionColumns = iota
	listReaderFeatures
	listWriterFeatures
	numListSlots
)

type colSetter func(a *rowAsm, v parquet.Value)

// columnPlan is how one leaf column of the file is read.
type columnPlan struct {
	top    int       // top-level action column
	topDef int       // definition level at which the action is non-null
	set    colSetter // nil: only marks the action present
	// setDef is the definition level below which set ignores a value (at
	// least topDef): a null value below it only marks the action present
	// (when at topDef or above), without a call of set.
	setDef int
	parsed *parsedLeaf // add.stats_parsed / add.partitionValues_parsed leaf
}

func valueString(a *rowAsm, v parquet.Value) string {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return string(v.ByteArray())
	}
	a.fail("string column holds %s", v.Kind())
	return ""
}

func valueBytes(a *rowAsm, v parquet.Value) []byte {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return v.ByteArray()
	}
	a.fail("string column holds %s", v.Kind())
	return nil
}

// twoStrings returns x and y as strings sharing one allocation.
func twoStrings(x, y []byte) (string, string) {
	switch {
	case len(x) == 0:
		return "", string(y)
	case len(y) == 0:
		return string(x), ""
	}
	buf := make([]byte, len(x)+len(y))
	copy(buf, x)
	copy(buf[len(x):], y)
	return unsafe.String(&buf[0], len(x)), unsafe.String(&buf[len(x)], len(y))
}

func valueInt64(a *rowAsm, v parquet.Value) int64 {
	switch v.Kind() {
	case parquet.Int64:
		return v.Int64()
	case parquet.Int32:
		return int64(v.Int32())
	}
	a.fail("integer column holds %s", v.Kind())
	return 0
}

func valueBool(a *rowAsm, v parquet.Value) bool {
	if v.Kind() == parquet.Boolean {
		return v.Boolean()
	}
	a.fail("boolean column holds %s", v.Kind())
	return false
}

func (a *rowAsm) fail(format string, args ...any) {
	if a.err == nil {
		a.err = fmt.Errorf(format, args...)
	}
}

// scalar returns a setter that calls f for a non-null value.
func scalar(maxDef int, f func(a *rowAsm, v parquet.Value)) colSetter {
	return func(a *rowAsm, v parquet.Value) {
		if v.DefinitionLevel() == maxDef {
			f(a, v)
		}
	}
}

func int64Ptr(a *rowAsm, v parquet.Value) *int64 { n := valueInt64(a, v); return &n }

// dvSetters returns the setters of a deletionVector struct's fields; dvDef
// is the definition level at which the struct is non-null.
func dvSetters(field string, dvDef, maxDef int, dv func(a *rowAsm) *DeletionVectorDescriptor, has func(a *rowAsm) *bool) colSetter {
	var f func(a *rowAsm, d *DeletionVectorDescriptor, v parquet.Value)
	switch field {
	case "storageType":
		f = func(a *rowAsm, d *DeletionVectorDescriptor, v parquet.Value) { d.StorageType = valueString(a, v) }
	case "pathOrInlineDv":
		f = func(a *rowAsm, d *DeletionVectorDescriptor, v parquet.Value) { d.PathOrInlineDv = valueString(a, v) }
	case "offset":
		f = func(a *rowAsm, d *DeletionVectorDescriptor, v parquet.Value) {
			o := int32(valueInt64(a, v))
			d.Offset = &o
		}
	case "sizeInBytes":
		f = func(a *rowAsm, d *DeletionVectorDescriptor, v parquet.Value) { d.SizeInBytes = int32(valueInt64(a, v)) }
	case "cardinality":
		f = func(a *rowAsm, d *DeletionVectorDescriptor, v parquet.Value) { d.Cardinality = valueInt64(a, v) }
	default:
		return nil
	}
	return func(a *rowAsm, v parquet.Value) {
		if v.DefinitionLevel() >= dvDef {
			*has(a) = true
		}
		if v.DefinitionLevel() == maxDef {
			f(a, dv(a), v)
		}
	}
}

// mapSetter collects the keys or the values of map slot; mapDef is the level
// at which the map is non-null, entryDef the level at which an entry exists.
func mapSetter(slot int, isKey bool, mapDef, entryDef, maxDef int) colSetter {
	return func(a *rowAsm, v parquet.Value) {
		d := v.DefinitionLevel()
		if d >= mapDef {
			a.hasMap[slot] = true
		}
		if d < entryDef {
			return
		}
		s := ""
		if d == maxDef {
			s = a.internString(v)
		}
		if isKey {
			a.keys[slot] = append(a.keys[slot], s)
		} else {
			a.vals[slot] = append(a.vals[slot], s)
		}
	}
}

func listSetter(slot int, listDef, maxDef int) colSetter {
	return func(a *rowAsm, v parquet.Value) {
		d := v.DefinitionLevel()
		if d >= listDef {
			a.hasLst[slot] = true
		}
		if d == maxDef {
			a.lists[slot] = append(a.lists[slot], valueString(a, v))
		}
	}
}

// planColumns maps every leaf column of schema to its plan; columns the
// reader does not know get a plan without setter (they still mark their
// action present).
func planColumns(schema *parquet.Schema) ([]columnPlan, error) {
	cols := schema.Columns()
	plans := make([]columnPlan, len(cols))
	for i, path := range cols {
		plans[i].top = -1
		top, ok := topColumnIndex[path[0]]
		if !ok {
			continue
		}
		// definition level reached at each depth of the path
		defs := make([]int, len(path))
		var node parquet.Node = schema
		def := 0
		nodes := make([]parquet.Node, len(path))
		for j, name := range path {
			var next parquet.Node
			for _, f := range node.Fields() {
				if f.Name() == name {
					next = f
					break
				}
			}
			if next == nil {
				return nil, fmt.Errorf("column %s not found in the schema", strings.Join(path, "."))
			}
			if next.Optional() || next.Repeated() {
				def++
			}
			defs[j], nodes[j], node = def, next, next
		}
		leaf, _ := schema.Lookup(path...)
		if leaf.ColumnIndex != i {
			return nil, fmt.Errorf("column %s has index %d, want %d", strings.Join(path, "."), leaf.ColumnIndex, i)
		}
		maxDef := leaf.MaxDefinitionLevel
		if pl := newParsedPlan(path, nodes, maxDef); pl != nil {
			plans[i] = columnPlan{top: top, topDef: defs[0], set: parsedSetter(pl, defs[1], path[1] == "partitionValues_parsed"), setDef: defs[1], parsed: pl}
			continue
		}
		set, setDef := planSetter(top, path, defs, nodes, maxDef)
		plans[i] = columnPlan{top: top, topDef: defs[0], set: set, setDef: max(setDef, defs[0])}
	}
	return plans, nil
}

// The checkpoint fields the reader knows, one table entry per field (spec
// "Checkpoint Schema"): plainFields are the leaf columns directly under an
// action, mapFields and listFields its maps and lists (by slot), all three
// generated from internal/ckgen/fields.go (checkpoint_rows.go); dvFields
// the deletionVector structs. A field the tables do not name is skipped.
type fieldSetter = func(a *rowAsm, v parquet.Value)

// dvFields are the deletionVector structs of add and remove: where the
// struct is assembled and where its presence is noted.
var dvFields = [numTopColumns]*struct {
	dv  func(a *rowAsm) *DeletionVectorDescriptor
	has func(a *rowAsm) *bool
}{
	colAdd:    {func(a *rowAsm) *DeletionVectorDescriptor { return &a.addDV }, func(a *rowAsm) *bool { return &a.hasADV }},
	colRemove: {func(a *rowAsm) *DeletionVectorDescriptor { return &a.remDV }, func(a *rowAsm) *bool { return &a.hasRDV }},
}

// planSetter returns the setter of one known leaf column, or nil, and the
// definition level below which the setter ignores a value (its
// columnPlan.setDef).
func planSetter(top int, path []string, defs []int, nodes []parquet.Node, maxDef int) (colSetter, int) {
	if len(path) < 2 {
		return nil, 0
	}
	field := path[1]
	if len(path) == 2 {
		if f := plainFields[top][field]; f != nil {
			return scalar(maxDef, f), maxDef
		}
		return nil, 0
	}
	if slot, ok := mapFields[top][field]; ok {
		return mapLeafSetter(slot, 1, path, defs, nodes, maxDef), defs[1]
	}
	if slot, ok := listFields[top][field]; ok {
		return listSetter(slot, defs[1], maxDef), defs[1]
	}
	if d := dvFields[top]; d != nil && field == "deletionVector" && len(path) == 3 {
		return dvSetters(path[2], defs[1], maxDef, d.dv, d.has), defs[1]
	}
	if top == colMetaData && field == "format" {
		switch {
		case len(path) == 3 && path[2] == "provider":
			return scalar(maxDef, func(a *rowAsm, v parquet.Value) { a.meta.Format.Provider = valueString(a, v) }), maxDef
		case path[2] == "options":
			return mapLeafSetter(mapMetaFormatOptions, 2, path, defs, nodes, maxDef), defs[2]
		}
	}
	return nil, 0
}

// mapLeafSetter returns the setter of a map's key or value column
// <top>.<field>.<repeated group>.key|value, the map at depth (format.options
// is one level deeper), or nil for any other shape.
func mapLeafSetter(slot, depth int, path []string, defs []int, nodes []parquet.Node, maxDef int) colSetter {
	if len(path) != depth+3 || !nodes[depth+1].Repeated() {
		return nil
	}
	switch path[depth+2] {
	case "key":
		return mapSetter(slot, true, defs[depth], defs[depth+1], maxDef)
	case "value":
		return mapSetter(slot, false, defs[depth], defs[depth+1], maxDef)
	}
	return nil
}

func (a *rowAsm) reset() {
	*a = rowAsm{keys: a.keys, vals: a.vals, lists: a.lists, intern: a.intern, maps: a.maps, mapKey: a.mapKey, seg: a.seg,
		statsParsed: a.statsParsed[:0], pvParsed: a.pvParsed[:0], statsBuf: a.statsBuf[:0]}
	for i := range a.keys {
		a.keys[i], a.vals[i] = a.keys[i][:0], a.vals[i][:0]
	}
	for i := range a.lists {
		a.lists[i] = a.lists[i][:0]
	}
}

// buildMap returns the map of slot: nil when null, else the key/value pairs.
func (a *rowAsm) buildMap(slot int) map[string]string {
	if !a.hasMap[slot] {
		return nil
	}
	keys, vals := a.keys[slot], a.vals[slot]
	if len(vals) < len(keys) {
		a.fail("map with %d keys and %d values", len(keys), len(vals))
		return nil
	}
	shared := slot == mapAddPartitionValues || slot == mapRemovePartitionValues
	if shared {
		a.mapKey = a.mapKey[:0]
		for i, k := range keys {
			a.mapKey = appendPVKey(a.mapKey, k, vals[i])
		}
		if m, ok := a.maps[string(a.mapKey)]; ok {
			return m
		}
	}
	m := make(map[string]string, len(keys))
	for i, k := range keys {
		m[k] = vals[i]
	}
	if shared {
		if a.maps == nil {
			a.maps = map[string]map[string]string{}
		}
		if len(a.maps) < 4096 {
			a.maps[string(a.mapKey)] = m
		}
	}
	return m
}

func (a *rowAsm) buildList(slot int) []string {
	if !a.hasLst[slot] {
		return nil
	}
	return append([]string{}, a.lists[slot]...)
}

// validator passes valid actions to fn and keeps the first invalid one's
// error (its emit is made once per row group, not per row).
type validator struct {
	fn  func(*Action)
	err error
}

func (v *validator) emit(a *Action) {
	if v.err == nil {
		if v.err = a.validate(); v.err == nil {
			v.fn(a)
		}
	}
}

// finishRow emits the assembled row's actions through v and returns the
// row's error: a column of the wrong type, or an invalid action.
func (a *rowAsm) finishRow(v *validator) error {
	if a.err != nil {
		return fmt.Errorf("checkpoint column of the wrong type: %w", a.err)
	}
	a.emit(v.emit)
	if a.err != nil {
		return fmt.Errorf("invalid checkpoint row: %w", a.err)
	}
	if v.err != nil {
		return fmt.Errorf("invalid checkpoint row: %w", v.err)
	}
	return nil
}

// emit calls fn with each action of the row (normally exactly one); an add
// goes into a.seg instead when that is set.
func (a *rowAsm) emit(fn func(*Action)) {
	if a.present[colAdd] && a.seg != nil {
		a.packAdd()
	} else if a.present[colAdd] {
		add := a.assembleAdd(true, map[string]string{})
		a.out = Action{Add: &add}
		fn(&a.out)
	}
	if a.present[colRemove] {
		r := a.remove
		r.PartitionValues = a.buildMap(mapRemovePartitionValues)
		if a.hasRDV {
			dv := a.remDV
			r.DeletionVector = &dv
		}
		a.out = Action{Remove: &r}
		fn(&a.out)
	}
	if a.present[colMetaData] {
		m := a.meta
		m.Format.Options = a.buildMap(mapMetaFormatOptions)
		m.Configuration = a.buildMap(mapMetaConfiguration)
		if m.Configuration == nil {
			m.Configuration = map[string]string{}
		}
		m.PartitionColumns = a.buildList(listPartitionColumns)
		if m.PartitionColumns == nil {
			m.PartitionColumns = []string{}
		}
		a.out = Action{Metadata: &m}
		fn(&a.out)
	}
	if a.present[colProtocol] {
		p := a.proto
		p.ReaderFeatures = a.buildList(listReaderFeatures)
		p.WriterFeatures = a.buildList(listWriterFeatures)
		a.out = Action{Protocol: &p}
		fn(&a.out)
	}
	if a.present[colTxn] {
		t := a.txn
		a.out = Action{Txn: &t}
		fn(&a.out)
	}
	if a.present[colDomainMetadata] {
		d := a.domain
		a.out = Action{DomainMetadata: &d}
		fn(&a.out)
	}
	if a.present[colCheckpointMetadata] {
		c := a.cpMeta
		c.Tags = a.buildMap(mapCheckpointMetadataTags)
		a.out = Action{CheckpointMetadata: &c}
		fn(&a.out)
	}
	if a.present[colSidecar] {
		s := a.sidecar
		s.Tags = a.buildMap(mapSidecarTags)
		a.out = Action{Sidecar: &s}
		fn(&a.out)
	}
}

// assembleAdd returns the row's add action: its path and stats copied, or
// with owned false the row's bytes (valid until the next page); noPV is its
// partitionValues when the row has neither the map nor
// partitionValues_parsed.
func (a *rowAsm) assembleAdd(owned bool, noPV map[string]string) Add {
	a.applyParsed()
	add := a.add
	if owned {
		add.Path, add.Stats = twoStrings(a.addPath, a.addStats)
	} else {
		add.Path, add.Stats = unsafeString(a.addPath), unsafeString(a.addStats)
	}
	add.PartitionValues = a.buildMap(mapAddPartitionValues)
	if add.PartitionValues == nil {
		add.PartitionValues = a.parsedPartitionValues()
	}
	if add.PartitionValues == nil {
		add.PartitionValues = noPV
	}
	add.Tags = a.buildMap(mapAddTags)
	if a.hasADV {
		dv := a.addDV
		add.DeletionVector = &dv
	}
	return add
}

// packAdd packs the row's add action into a.seg; its path and stats are
// the row's bytes, which seg copies.
func (a *rowAsm) packAdd() {
	add := a.assembleAdd(false, emptyPartitionValues)
	act := Action{Add: &add}
	if err := act.validate(); err != nil {
		a.fail("%w", err)
		return
	}
	packInto(a.seg, &add)
}

// unsafeString returns b's bytes as a string without copying: b must not
// change while the string is used.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// readCheckpointParquet decodes one checkpoint (or, with topLevel false,
// sidecar) Parquet file held in data and calls fn for each action in row
// order; fn must not keep the *Action (its fields may be kept). file and
// version name the file in errors. With pb set, add actions are packed into
// pb (in row order, by the goroutine that decodes them) instead of being
// passed to fn. A top-level checkpoint must have the protocol and metaData
// columns, a sidecar the add or remove column; otherwise, for a column of an
// unexpected type, and for any Parquet decoding failure (including a panic
// inside the Parquet library), it returns a *CorruptLogError.
func readCheckpointParquet(file string, version int64, data []byte, topLevel bool, fn func(*Action), pb *packBuilder) (err error) {
	return readCheckpointParquetAt(file, version, bytes.NewReader(data), int64(len(data)), nil, topLevel, fn, pb)
}

// readCheckpointParquetAt is readCheckpointParquet for a file of size bytes
// read through ra; with src set (ra is src), src fetches and checks the row
// groups one at a time as they are decoded.
func readCheckpointParquetAt(file string, version int64, ra io.ReaderAt, size int64, src *rangedSource, topLevel bool, fn func(*Action), pb *packBuilder) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = corrupt(file, version, fmt.Errorf("%v", r), "cannot decode checkpoint Parquet")
		}
	}()
	pf, plans, err := openCheckpointParquet(file, version, ra, size, src, topLevel)
	if err != nil {
		return err
	}
	groups := pf.RowGroups()
	if topLevel {
		if err := resolveParsedTimestamps(groups, plans); err != nil {
			return corrupt(file, version, err, "cannot decode checkpoint Parquet")
		}
	}
	if pb != nil {
		// The footer's row counts are untrusted: the room reserved is
		// bounded by the file's size (real checkpoints take far more
		// than 16 bytes per add row).
		rows := make([]int64, len(groups))
		for i, g := range groups {
			rows[i] = g.NumRows()
		}
		pb.Reserve(rows, size/16)
	}
	if workers := min(len(groups), runtime.GOMAXPROCS(0)); workers > 1 {
		err = decodeRowGroupsParallel(groups, plans, fn, pb, workers)
	} else {
		err = decodeRowGroupsSerial(groups, plans, fn, pb)
	}
	if err != nil {
		return corrupt(file, version, err, "cannot decode checkpoint Parquet")
	}
	return nil
}

// openCheckpointParquet opens the checkpoint or sidecar Parquet file of
// size bytes that ra reads (src, when set, is ra reading in ranges) and
// plans the decoding of its columns; errors are *CorruptLogError.
func openCheckpointParquet(file string, version int64, ra io.ReaderAt, size int64, src *rangedSource, topLevel bool) (*parquet.File, []columnPlan, error) {
	if err := checkParquetFrame(ra, size); err != nil {
		return nil, nil, corrupt(file, version, err, "not a Parquet file")
	}
	pf, err := parquet.OpenFile(ra, size)
	if err != nil {
		return nil, nil, corrupt(file, version, err, "not a Parquet file")
	}
	// A damaged page header must not make the decoder allocate gigabytes
	// (a fatal out-of-memory error cannot be recovered): the pages are
	// checked before any is decoded, here, or row group by row group as
	// src fetches them.
	if src != nil {
		err = src.bind(pf)
	} else {
		err = parquetio.CheckPages(pf, ra)
	}
	if err != nil {
		return nil, nil, corrupt(file, version, err, "damaged checkpoint Parquet")
	}
	schema := pf.Schema()
	cols := map[string]bool{}
	for _, f := range schema.Fields() {
		cols[f.Name()] = true
	}
	if topLevel && (!cols["protocol"] || !cols["metaData"]) {
		return nil, nil, corrupt(file, version, nil, "checkpoint schema lacks the protocol or metaData column")
	}
	if !topLevel && !cols["add"] && !cols["remove"] {
		return nil, nil, corrupt(file, version, nil, "sidecar schema lacks the add and remove columns")
	}
	plans, err := planColumns(schema)
	if err != nil {
		return nil, nil, corrupt(file, version, err, "checkpoint schema")
	}
	return pf, plans, nil
}

// newSegFor returns the packing segment of row group g, or nil without pb.
func newSegFor(pb *packBuilder, g int) *packSeg {
	if pb == nil {
		return nil
	}
	return pb.SegAt(g)
}

// decodeRowGroupsSerial decodes the row groups one after the other.
func decodeRowGroupsSerial(groups []parquet.RowGroup, plans []columnPlan, fn func(*Action), pb *packBuilder) error {
	for i, g := range groups {
		seg := newSegFor(pb, i)
		if err := decodeRowGroupColumns(g, plans, fn, seg); err != nil {
			return err
		}
		pb.AppendSeg(seg)
	}
	return nil
}

// decodeRowGroupsParallel decodes the row groups on workers goroutines, in
// batches; fn sees the actions in file order, and pb gets the segments in
// file order.
func decodeRowGroupsParallel(groups []parquet.RowGroup, plans []columnPlan, fn func(*Action), pb *packBuilder, workers int) error {
	const batchSize = 1024
	out := make([]chan []Action, len(groups))
	errs := make([]error, len(groups))
	segs := make([]*packSeg, len(groups))
	for i := range out {
		out[i] = make(chan []Action, 4)
	}
	done := make(chan struct{})
	// free recycles the batches the consumer is done with.
	free := make(chan []Action, workers*5)
	newBatch := func() []Action {
		select {
		case b := <-free:
			return b[:0]
		default:
			return make([]Action, 0, batchSize)
		}
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(groups) {
					return
				}
				batch := newBatch()
				stopped := false
				segs[i] = newSegFor(pb, i)
				errs[i] = safeDecode(groups[i], plans, segs[i], func(a *Action) {
					if stopped {
						return
					}
					batch = append(batch, *a)
					if len(batch) == batchSize {
						select {
						case out[i] <- batch:
							batch = newBatch()
						case <-done:
							stopped = true
						}
					}
				})
				if len(batch) > 0 && !stopped {
					select {
					case out[i] <- batch:
					case <-done:
					}
				}
				close(out[i])
			}
		})
	}
	defer func() {
		close(done)
		wg.Wait()
	}()
	for i := range groups {
		for batch := range out[i] {
			for j := range batch {
				fn(&batch[j])
			}
			clear(batch)
			select {
			case free <- batch:
			default:
			}
		}
		if errs[i] != nil {
			return errs[i]
		}
		pb.AppendSeg(segs[i])
		segs[i] = nil
	}
	return nil
}

// checkParquetFrame checks the frame of a Parquet file: "PAR1" at both
// ends and a footer length that fits in the file. parquet-go allocates the
// footer's claimed length before it compares it with the file size, so a
// few garbage bytes ending in "PAR1" could make it allocate gigabytes.
func checkParquetFrame(ra io.ReaderAt, n int64) error {
	const magic = "PAR1"
	if n < 12 {
		return fmt.Errorf("%d bytes is too short for a Parquet file", n)
	}
	var head [4]byte
	var tail [8]byte
	if _, err := ra.ReadAt(head[:], 0); err != nil {
		return err
	}
	if _, err := ra.ReadAt(tail[:], n-8); err != nil {
		return err
	}
	if string(head[:]) != magic || string(tail[4:]) != magic {
		return fmt.Errorf("no Parquet magic bytes %q at the start and end", magic)
	}
	footer := int64(binary.LittleEndian.Uint32(tail[:4]))
	if footer == 0 || footer > n-12 {
		return fmt.Errorf("footer length %d does not fit in a file of %d bytes", footer, n)
	}
	return nil
}

// safeDecode is decodeRowGroupColumns with panics turned into errors.
func safeDecode(g parquet.RowGroup, plans []columnPlan, seg *packSeg, fn func(*Action)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return decodeRowGroupColumns(g, plans, fn, seg)
}
