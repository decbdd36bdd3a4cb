package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltakit/deltakit/schema"
)

// TestStdinAndPipes: "-" and a named pipe are read once (a second read of
// a pipe would see nothing) and their format is sniffed.
func TestStdinAndPipes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, input, schema string
		format              Format
	}{
		{"ndjson", "{\"id\":1,\"s\":\"a\"}\n{\"id\":2,\"s\":\"b\"}\n", "struct<id:long,s:string>", NDJSON},
		{"csv", "id,s\n1,a\n2,b\n", "struct<id:long,s:string>", CSV},
	} {
		t.Run(tc.name+"/stdin", func(t *testing.T) {
			src, err := Open(ctx, "-", WithStdin(strings.NewReader(tc.input)))
			if err != nil {
				t.Fatal(err)
			}
			spool := src.spool
			checkSource(t, src, tc.schema, tc.format)
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(spool); !os.IsNotExist(err) {
				t.Errorf("spool file %s left after Close: %v", spool, err)
			}
			if got := src.Files(); len(got) != 1 || got[0] != "-" {
				t.Errorf("Files %v, want [-]", got)
			}
		})
		t.Run(tc.name+"/fifo", func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "in")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skip("no fifo:", err)
			}
			go func() {
				f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err != nil {
					return
				}
				f.WriteString(tc.input)
				f.Close()
			}()
			src, err := Open(ctx, fifo)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			checkSource(t, src, tc.schema, tc.format)
		})
	}
	// A parse error names the input as given, not the spool file.
	_, err := Open(ctx, "-", WithStdin(strings.NewReader("{\"id\":1}\n{\"id\":\n")))
	if err == nil || !strings.HasPrefix(err.Error(), "-:2: ") {
		t.Errorf("stdin parse error %v, want it to start with -:2:", err)
	}
}

func checkSource(t *testing.T, src *Source, schema string, format Format) {
	t.Helper()
	if src.Format() != format || src.Schema().String() != schema {
		t.Fatalf("format %s schema %s, want %s %s", src.Format(), src.Schema(), format, schema)
	}
	if got := strings.Join(readAll(t, src, 0), "|"); got != "1a|2b" {
		t.Errorf("rows %q, want 1a|2b", got)
	}
}

// TestNDJSONErrorsSayWhat: a bad line says what is wrong with it.
func TestNDJSONErrorsSayWhat(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, line, want string }{
		{"cut object", `{"id": 1`, "f.ndjson:2: invalid JSON at byte 8: unexpected end of JSON input"},
		{"cut string", `{"id": "ab`, "f.ndjson:2: invalid JSON at byte 10: unexpected end of JSON input"},
		{"bad value", `{"id": tru}`, "f.ndjson:2: invalid JSON at byte 11: invalid character '}' in literal true (expecting 'e')"},
		{"missing colon", `{"id" 1}`, "f.ndjson:2: invalid JSON at byte 7: invalid character '1' after object key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "f.ndjson", "{\"id\": 0}\n"+tc.line+"\n")
			_, err := Open(context.Background(), p)
			if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
				t.Errorf("error %v, want it to end with %q", err, tc.want)
			}
		})
	}
	// A value of the wrong type names the column.
	p := writeFile(t, dir, "g.ndjson", "{\"id\": 0}\n{\"id\": \"x\"}\n")
	src, err := Open(context.Background(), p, WithTargetSchema(mustStruct(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range src.Rows(context.Background(), 0) {
		if err != nil {
			if !strings.Contains(err.Error(), "g.ndjson:2: column id") {
				t.Errorf("conversion error %v does not name line and column", err)
			}
			return
		}
	}
	t.Error("a string in a long column was accepted")
}

func mustStruct(t *testing.T) *schema.StructType {
	return schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
}
