package parquetio

import (
	"bufio"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// corpusDir returns the conformance corpus folder (testsupport.CorpusDir:
// $DELTAKIT_CORPUS, else ../shared/corpus beside the repository root).
func corpusDir(t testing.TB) string { return testsupport.CorpusDir(t) }

// corpusTable is what the tests need from a table's version-0 log: the data
// schema (partition columns removed), the column mapping mode, the add
// actions' store keys and stats.
type corpusTable struct {
	dir       string
	schema    *schema.StructType // full table schema
	data      *schema.StructType // without partition columns
	mode      string
	keys      []string
	stats     map[string]string // key -> add.stats
	partition map[string]map[string]*string
	config    map[string]string
}

func loadCorpusTable(t testing.TB, name string) *corpusTable {
	t.Helper()
	dir := filepath.Join(corpusDir(t), name)
	f, err := os.Open(filepath.Join(dir, "_delta_log", "00000000000000000000.json"))
	if err != nil {
		testsupport.Absent(t, "table %s not in corpus: %v", name, err)
	}
	defer f.Close()
	tbl := &corpusTable{dir: dir, mode: "none", stats: map[string]string{}, partition: map[string]map[string]*string{}}
	var partCols []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var a struct {
			MetaData *struct {
				SchemaString     string            `json:"schemaString"`
				PartitionColumns []string          `json:"partitionColumns"`
				Configuration    map[string]string `json:"configuration"`
			} `json:"metaData"`
			Add *struct {
				Path            string             `json:"path"`
				Stats           string             `json:"stats"`
				PartitionValues map[string]*string `json:"partitionValues"`
			} `json:"add"`
		}
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a.MetaData != nil {
			st, err := schema.Parse(a.MetaData.SchemaString)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			tbl.schema = st
			tbl.config = a.MetaData.Configuration
			partCols = a.MetaData.PartitionColumns
			if m := a.MetaData.Configuration["delta.columnMapping.mode"]; m != "" {
				tbl.mode = m
			}
		}
		if a.Add != nil {
			key, err := url.PathUnescape(a.Add.Path)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			tbl.keys = append(tbl.keys, key)
			tbl.stats[key] = a.Add.Stats
			tbl.partition[key] = a.Add.PartitionValues
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if tbl.schema == nil {
		t.Fatalf("%s: no metaData in version 0", name)
	}
	tbl.data = &schema.StructType{}
	for _, fld := range tbl.schema.Fields {
		isPart := false
		for _, p := range partCols {
			if p == fld.Name {
				isPart = true
			}
		}
		if !isPart {
			tbl.data.Fields = append(tbl.data.Fields, fld)
		}
	}
	return tbl
}

// readRows reads every data file of the table with readSchema through a
// local store and returns all rows, file by file in log order.
func (tbl *corpusTable) readRows(t testing.TB, readSchema *schema.StructType, opts ...ReadOption) []value.Row {
	t.Helper()
	store, err := objectstore.NewLocal(tbl.dir)
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]ReadOption{WithColumnMapping(tbl.mode)}, opts...)
	var rows []value.Row
	for _, key := range tbl.keys {
		for row, err := range ReadFile(context.Background(), store, key, readSchema, opts...) {
			if err != nil {
				t.Fatalf("read %s: %v", key, err)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// sparkStats is a parsed add.stats with top-level min/max as JSON text.
type sparkStats struct {
	numRecords int64
	min, max   map[string]string
	raw        map[string]any
}

func parseSparkStats(t testing.TB, s string) sparkStats {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("stats %q: %v", s, err)
	}
	out := sparkStats{min: map[string]string{}, max: map[string]string{}, raw: raw}
	if n, ok := raw["numRecords"].(json.Number); ok {
		out.numRecords, _ = n.Int64()
	}
	for k, dst := range map[string]map[string]string{"minValues": out.min, "maxValues": out.max} {
		m, _ := raw[k].(map[string]any)
		for name, v := range m {
			switch v := v.(type) {
			case json.Number:
				dst[name] = v.String()
			case string:
				dst[name] = v
			}
		}
	}
	return out
}

// renameType returns a copy of st with field name's type replaced by the
// primitive typ.
func renameType(st *schema.StructType, name, typ string) *schema.StructType {
	out := &schema.StructType{}
	for _, f := range st.Fields {
		g := *f
		if f.Name == name {
			g.Type = schema.Primitive(typ)
		}
		out.Fields = append(out.Fields, &g)
	}
	return out
}
