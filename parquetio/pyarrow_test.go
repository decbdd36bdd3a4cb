package parquetio

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// pyarrowScript reads Parquet files and prints, per file, the rows in a
// neutral JSON form (decimals as plain text, bytes as hex, timestamps as
// integer microseconds, structs as lists, maps as [key, value] pairs) and
// per column whether its chunks have min/max statistics and a column index.
// Every warning is shown (on stderr, which must stay empty). It ends with
// os._exit so that a crash of a native library's teardown at interpreter
// exit cannot fail the test once the results are out.
const pyarrowScript = `
import datetime, decimal, json, os, sys, warnings
warnings.simplefilter("always")
import pyarrow.parquet as pq

EPOCH = datetime.datetime(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

def conv(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, decimal.Decimal):
        return format(v, 'f')
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, datetime.datetime):
        base = EPOCH_UTC if v.tzinfo is not None else EPOCH
        return (v - base) // datetime.timedelta(microseconds=1)
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, dict):
        return [conv(x) for x in v.values()]
    if isinstance(v, tuple):
        return [conv(x) for x in v]
    if isinstance(v, list):
        return [conv(x) for x in v]
    raise TypeError(type(v))

out = []
for path in sys.argv[1:]:
    f = pq.ParquetFile(path)
    rows = [[conv(r[k]) for k in r] for r in f.read().to_pylist()]
    chunks = {}
    for g in range(f.metadata.num_row_groups):
        rg = f.metadata.row_group(g)
        for c in range(rg.num_columns):
            cc = rg.column(c)
            st = cc.statistics
            chunks[cc.path_in_schema] = {"min_max": bool(st is not None and st.has_min_max), "column_index": bool(cc.has_column_index)}
    out.append({"rows": rows, "chunks": chunks, "num_rows": f.metadata.num_rows})
print(json.dumps(out))
sys.stdout.flush(); os._exit(0)
`

// pythonWithPyarrow returns a Python interpreter that can import pyarrow:
// $DELTAKIT_PYTHON, else the interop venv's ($DELTAKIT_VENV, default
// <repo>/.venv, which scripts/install-interop.sh fills), else python3. When
// none has pyarrow it fails the test with CI=true and skips it otherwise.
func pythonWithPyarrow(t *testing.T) string {
	t.Helper()
	var candidates []string
	if py := os.Getenv("DELTAKIT_PYTHON"); py != "" {
		candidates = append(candidates, py)
	}
	venv := os.Getenv("DELTAKIT_VENV")
	if venv == "" {
		venv = filepath.Join("..", ".venv")
	}
	candidates = append(candidates, filepath.Join(venv, "bin", "python"), "python3")
	for _, py := range candidates {
		if err := exec.Command(py, "-c", "import pyarrow.parquet").Run(); err == nil {
			return py
		}
	}
	testsupport.Absent(t, "no python with pyarrow among %v: run scripts/install-interop.sh", candidates)
	return ""
}

// toNeutral converts a value of the value model to the script's JSON form.
func toNeutral(v any) any {
	switch x := v.(type) {
	case nil, bool, string:
		return x
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case float32:
		return float64(x)
	case float64:
		return x
	case value.Decimal:
		return x.String()
	case []byte:
		return hex.EncodeToString(x)
	case value.Date:
		return x.String()
	case time.Time:
		return x.UnixMicro()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toNeutral(e)
		}
		return out
	case []value.MapEntry:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = []any{toNeutral(e.Key), toNeutral(e.Value)}
		}
		return out
	}
	panic("toNeutral: " + reflect.TypeOf(v).String())
}

// TestPyarrowReadsOurFiles writes files with every type and checks that
// pyarrow reads the same values without a warning, and that
// FIXED_LEN_BYTE_ARRAY decimal columns carry no min/max and no column index
// (see fixFooter), in any position of the schema.
func TestPyarrowReadsOurFiles(t *testing.T) {
	py := pythonWithPyarrow(t)
	dir := t.TempDir()
	type file struct {
		sch  *schema.StructType
		rows []value.Row
		opts []WriteOption
	}
	_, fl := flights(20000)
	files := []file{
		{allTypesSchema(), allTypesRows(200), nil},
		{allTypesSchema(), allTypesRows(50), []WriteOption{WithRowGroupRows(9), WithDictionary(false), WithCompression(Zstd)}},
		{flightsSchema(), fl, []WriteOption{WithRowGroupRows(6000), WithPageSize(8 << 10)}},
		{schema.NewStruct(field("s", prim(schema.String), true)), distinctStrings(120_000), nil}, // dictionary falls back to PLAIN
	}
	_, wideSchemas, wideRows := wideDecimalFiles() // files 4, 5, 6: decimal(30,2) first, middle, last
	for k := range wideSchemas {
		files = append(files, file{wideSchemas[k], wideRows[k], []WriteOption{WithRowGroupRows(2)}})
	}
	var paths []string
	for i, f := range files {
		data, _ := writeToBytes(t, f.sch, f.rows, f.opts...)
		p := filepath.Join(dir, "f"+string(rune('0'+i))+".parquet")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	script := filepath.Join(dir, "read.py")
	if err := os.WriteFile(script, []byte(pyarrowScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, append([]string{script}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("pyarrow wrote to stderr reading our files:\n%s", stderr.String())
	}
	var got []struct {
		Rows    []any                      `json:"rows"`
		Chunks  map[string]map[string]bool `json:"chunks"`
		NumRows int                        `json:"num_rows"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if got[i].NumRows != len(f.rows) || len(got[i].Rows) != len(f.rows) {
			t.Fatalf("file %d: pyarrow sees %d rows, want %d", i, got[i].NumRows, len(f.rows))
		}
		for j, row := range f.rows {
			want, _ := json.Marshal(toNeutral([]any(row)))
			var w any
			_ = json.Unmarshal(want, &w)
			if !reflect.DeepEqual(got[i].Rows[j], w) {
				g, _ := json.Marshal(got[i].Rows[j])
				t.Fatalf("file %d row %d:\npyarrow %s\n   want %s", i, j, g, want)
			}
		}
	}
	none := map[string]bool{"min_max": false, "column_index": false}
	both := map[string]bool{"min_max": true, "column_index": true}
	minMaxOnly := map[string]bool{"min_max": true, "column_index": false}
	for i, want := range map[int]map[string]map[string]bool{
		0: {"dec38": none, "map_map.key_value.value.key_value.value": none, "dec18": both, "string": both},
		4: {"d": none, "id": minMaxOnly, "s": minMaxOnly}, // the first column has none: see fixFooter
		5: {"d": none, "id": both, "s": both},
		6: {"d": none, "id": both, "s": both},
	} {
		for path, w := range want {
			if g := got[i].Chunks[path]; !reflect.DeepEqual(g, w) {
				t.Errorf("file %d column %s: %v, want %v", i, path, g, w)
			}
		}
	}
}

func distinctStrings(n int) []value.Row {
	rows := make([]value.Row, n)
	for i := range rows {
		if i%10 == 0 {
			rows[i] = value.Row{nil}
			continue
		}
		rows[i] = value.Row{fmt.Sprintf("distinct-value-%012d", i)}
	}
	return rows
}
