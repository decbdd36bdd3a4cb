package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/testenv"
)

// upsertInput is NDJSON of (id, city, v) with repeated keys.
type upsertRow struct {
	ID   int64   `json:"id"`
	City string  `json:"city"`
	V    float64 `json:"v"`
}

func writeNDJSON(t *testing.T, path string, rows []upsertRow) {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		j, _ := json.Marshal(r)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// latestRef is the reference: the latest row per key over inputs, as
// sorted JSON lines of cat -o json.
func latestRef(keys []string, inputs ...[]upsertRow) []string {
	m := map[string]upsertRow{}
	for _, rows := range inputs {
		for _, r := range rows {
			k := fmt.Sprint(r.ID)
			if slices.Contains(keys, "city") {
				k += "/" + r.City
			}
			m[k] = r
		}
	}
	var out []string
	for _, r := range m {
		b, _ := json.Marshal(map[string]any{"id": r.ID, "city": r.City, "v": r.V})
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// catRows returns the table's rows as sorted, re-marshalled JSON lines.
func catRows(t *testing.T, uri string, extra ...string) []string {
	t.Helper()
	out := mustRun(t, append([]string{"cat", uri, "-o", "json"}, extra...)...)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		b, _ := json.Marshal(m)
		got = append(got, string(b))
	}
	slices.Sort(got)
	return got
}

func TestIngestMergeOn(t *testing.T) {
	first := []upsertRow{{1, "ams", 1}, {2, "ber", 2}, {1, "ams", 3}, {3, "cph", 4}, {2, "osl", 5}}
	second := []upsertRow{{2, "ber", 20}, {4, "ams", 40}, {4, "ams", 41}, {1, "ber", 10}, {5, "cph", 50}, {3, "cph", 30}}
	tests := []struct {
		name   string
		keys   []string
		create bool     // create the table first (else ingest creates it)
		flags  []string // more ingest flags
		props  []string
	}{
		{name: "batch, new table", keys: []string{"id"}},
		{name: "batch, existing table", keys: []string{"id"}, create: true},
		{name: "batch, deletion vectors", keys: []string{"id"}, create: true, props: []string{"--property", "delta.enableDeletionVectors=true"}},
		{name: "batch, two keys", keys: []string{"id", "city"}, create: true},
		{name: "stream, new table", keys: []string{"id"}, flags: []string{"--epoch-rows", "2", "--query-id", "q"}},
		{name: "stream, existing table, two keys", keys: []string{"id", "city"}, create: true, flags: []string{"--epoch-rows", "3", "--query-id", "q"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in1, in2 := filepath.Join(dir, "a.ndjson"), filepath.Join(dir, "b.ndjson")
			writeNDJSON(t, in1, first)
			writeNDJSON(t, in2, second)
			tbl := filepath.Join(dir, "t")
			if tc.create {
				mustRun(t, append([]string{"create", tbl, "--schema", "id long, city string, v double"}, tc.props...)...)
			}
			on := strings.Join(tc.keys, ",")
			var v IngestView
			if err := json.Unmarshal([]byte(mustRun(t, append([]string{"ingest", in1, tbl, "--merge-on", on, "-o", "json"}, tc.flags...)...)), &v); err != nil {
				t.Fatal(err)
			}
			want1 := latestRef(tc.keys, first)
			if got := catRows(t, tbl); !slices.Equal(got, want1) {
				t.Fatalf("after the first ingest:\n got %v\nwant %v", got, want1)
			}
			if v.Rows != int64(len(first)) || v.InsertedRows != int64(len(want1)) || !slices.Equal(v.MergeOn, tc.keys) ||
				v.TableRows == nil || *v.TableRows != int64(len(want1)) {
				t.Errorf("first ingest view: %+v", v)
			}
			// The second input: a new query id for a stream (another input).
			flags2 := slices.Clone(tc.flags)
			if i := slices.Index(flags2, "--query-id"); i >= 0 {
				flags2[i+1] = "q2"
			}
			text := mustRun(t, append([]string{"ingest", in2, tbl, "--merge-on", on}, flags2...)...)
			want := latestRef(tc.keys, first, second)
			if got := catRows(t, tbl); !slices.Equal(got, want) {
				t.Fatalf("after the second ingest:\n got %v\nwant %v", got, want)
			}
			if !strings.Contains(text, "upserted into") || !strings.Contains(text, fmt.Sprintf("%d input row(s) merged by key %s: ", len(second), strings.Join(tc.keys, ", "))) ||
				!strings.Contains(text, fmt.Sprintf("\nthe table now holds %d row(s)\n", len(want))) {
				t.Errorf("text output:\n%s", text)
			}
			hist := mustRun(t, "history", tbl, "-o", "json")
			if !strings.Contains(hist, `"MERGE"`) {
				t.Errorf("no MERGE in the history:\n%s", hist)
			}
			if len(tc.flags) > 0 {
				// A replay of the whole second stream is skipped, epoch by epoch.
				out := mustRun(t, append([]string{"ingest", in2, tbl, "--merge-on", on, "--from-epoch", "0", "-o", "json"}, flags2...)...)
				var rv IngestView
				if err := json.Unmarshal([]byte(out), &rv); err != nil {
					t.Fatal(err)
				}
				if rv.Committed != 0 || rv.Skipped == 0 {
					t.Errorf("replay: %+v", rv)
				}
				if got := catRows(t, tbl); !slices.Equal(got, want) {
					t.Fatalf("after the replay:\n got %v\nwant %v", got, want)
				}
				if out := mustRun(t, "verify", "--exactly-once", tbl); !strings.Contains(out, "query q2: exactly once") || !strings.Contains(out, "query q: exactly once") {
					t.Errorf("verify --exactly-once:\n%s", out)
				}
			}
		})
	}
}

// Bad --merge-on input is refused before anything is written.
func TestIngestMergeOnRefusals(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.ndjson")
	writeNDJSON(t, in, []upsertRow{{1, "ams", 1}})
	other := filepath.Join(dir, "b.ndjson")
	if err := os.WriteFile(other, []byte(`{"key":1,"city":"ams","v":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, city string, v double")
	mustRun(t, "ingest", in, tbl)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown key", []string{"ingest", in, tbl, "--merge-on", "nope"}, "--merge-on nope"},
		{"one unknown key of two", []string{"ingest", in, tbl, "--merge-on", "id,nope"}, "--merge-on id,nope"},
		{"unknown key, stream", []string{"ingest", in, tbl, "--merge-on", "nope", "--epoch-rows", "1", "--query-id", "q"}, "--merge-on nope"},
		{"key the table lacks", []string{"ingest", other, tbl, "--merge-on", "key"}, "has columns id, city, v"},
		{"empty key", []string{"ingest", in, tbl, "--merge-on", ","}, "empty key column"},
		{"unknown key, new table", []string{"ingest", in, filepath.Join(dir, "new"), "--merge-on", "nope"}, "--merge-on nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := runCLI(t, tc.args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 mentioning %q", code, errs, tc.want)
			}
			if got := catRows(t, tbl); len(got) != 1 {
				t.Fatalf("table changed: %v", got)
			}
			if out := mustRun(t, "history", tbl, "-o", "json"); strings.Count(out, `"version"`) != 2 {
				t.Fatalf("history changed:\n%s", out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("a refused ingest created a table: %v", err)
	}
}

// ingest --merge-on into a table on MinIO.
func TestIngestMergeOnS3(t *testing.T) {
	m := testenv.StartMinIO(t)
	t.Setenv("AWS_ACCESS_KEY_ID", m.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", m.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	s3 := []string{"--endpoint", m.Endpoint, "--path-style", "--region", m.Region}
	dir := t.TempDir()
	in1, in2 := filepath.Join(dir, "a.ndjson"), filepath.Join(dir, "b.ndjson")
	first := []upsertRow{{1, "ams", 1}, {2, "ber", 2}, {1, "ams", 3}}
	second := []upsertRow{{2, "ber", 20}, {3, "cph", 30}, {3, "cph", 31}}
	writeNDJSON(t, in1, first)
	writeNDJSON(t, in2, second)
	for _, flags := range [][]string{nil, {"--epoch-rows", "2", "--query-id", "q"}} {
		uri := m.URI(fmt.Sprintf("cli/upsert-%d", len(flags)))
		mustRun(t, append(append([]string{"ingest", in1, uri, "--merge-on", "id"}, flags...), s3...)...)
		flags2 := slices.Clone(flags)
		if len(flags2) > 0 {
			flags2[3] = "q2"
		}
		mustRun(t, append(append([]string{"ingest", in2, uri, "--merge-on", "id"}, flags2...), s3...)...)
		got := catRows(t, uri, s3...)
		if want := latestRef([]string{"id"}, first, second); !slices.Equal(got, want) {
			t.Errorf("%v: got %v, want %v", flags, got, want)
		}
	}
}
