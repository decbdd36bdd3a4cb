package main

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/deltakit/deltakit/testenv"
)

// TestS3EnvironmentOnly runs deltactl against MinIO with only the
// environment deltalake/object_store users set (AWS_ENDPOINT_URL at
// localhost, AWS_ALLOW_HTTP, the keys): no flags, no region.
func TestS3EnvironmentOnly(t *testing.T) {
	m := testenv.StartMinIO(t)
	dir := t.TempDir()
	for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_SESSION_TOKEN",
		"AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "AWS_CA_BUNDLE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
	u, err := url.Parse(m.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://localhost:"+u.Port())
	t.Setenv("AWS_ALLOW_HTTP", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", m.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", m.SecretKey)

	uri := m.URI("cli/envonly")
	mustRun(t, "ingest", "testdata/people.csv", uri)
	var snap SnapshotView
	if err := json.Unmarshal([]byte(mustRun(t, "snapshot", uri, "-o", "json")), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Table != uri || snap.NumRows != 5 {
		t.Errorf("snapshot %+v", snap)
	}
}
