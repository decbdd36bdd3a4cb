package table

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/value"
)

// isolateAWS clears the AWS environment and points the shared config files
// at nothing.
func isolateAWS(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT", "AWS_ALLOW_HTTP",
		"AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CA_BUNDLE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// A table on MinIO reached with the environment alone (AWS_ENDPOINT_URL at
// localhost, no region), and with the flat WithS3Endpoint option.
func TestS3TableConfigOnMinIO(t *testing.T) {
	m := testenv.StartMinIO(t)
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", m.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", m.SecretKey)
	u, err := url.Parse(m.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	localhost := "http://localhost:" + u.Port()
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), true))

	t.Run("environment only", func(t *testing.T) {
		t.Setenv("AWS_ENDPOINT_URL", localhost)
		t.Setenv("AWS_ALLOW_HTTP", "true")
		tbl, err := Create(ctx, m.URI("env"), sch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.AppendRows(ctx, []value.Row{{int64(1)}, {int64(2)}}); err != nil {
			t.Fatal(err)
		}
		back, err := Open(ctx, m.URI("env"))
		if err != nil || back.Version() != 1 || back.Snapshot().NumFiles() != 1 {
			t.Fatalf("reopen: %v", err)
		}
	})
	t.Run("WithS3Endpoint", func(t *testing.T) {
		tbl, err := Create(ctx, m.URI("opt"), sch, WithS3Endpoint(localhost), WithS3Region("us-east-1"), WithS3PathStyle(true))
		if err != nil {
			t.Fatal(err)
		}
		if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(1)}}); err != nil || tbl.Version() != 1 {
			t.Fatalf("append: %v", err)
		}
		// The endpoint option alone: path style inferred, default region.
		back, err := Open(ctx, m.URI("opt"), WithS3Endpoint(localhost))
		if err != nil || back.Version() != 1 {
			t.Fatalf("reopen: %v", err)
		}
	})
}

// A table URI with an unknown scheme, or an empty one, is ErrInvalidArgument
// and creates nothing.
func TestBadTableURI(t *testing.T) {
	t.Chdir(t.TempDir())
	sch := schema.NewStruct(field("id", prim(schema.Long), true))
	for _, uri := range []string{"", "gs://bucket/t", "htp:/x", "abfss://c@a.dfs.core.windows.net/t"} {
		if _, err := Create(context.Background(), uri, sch); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "s3://") {
			t.Errorf("Create(%q): %v, want ErrInvalidArgument naming the supported schemes", uri, err)
		}
		if _, err := Open(context.Background(), uri); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Open(%q): %v, want ErrInvalidArgument", uri, err)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("bad URIs left %v behind", entries)
	}
}
