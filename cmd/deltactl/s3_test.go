package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/testenv"
)

// TestS3 runs deltactl against a real MinIO server: credentials from the
// standard AWS environment variables, the server from --endpoint,
// --path-style and --region. It is skipped (failed with CI=true) when the
// MinIO binary is missing; scripts/install-minio.sh installs it.
func TestS3(t *testing.T) {
	m := testenv.StartMinIO(t)
	t.Setenv("AWS_ACCESS_KEY_ID", m.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", m.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	s3 := []string{"--endpoint", m.Endpoint, "--path-style", "--region", m.Region}
	uri := m.URI("cli/people")
	cli := func(args ...string) string {
		t.Helper()
		return mustRun(t, append(args, s3...)...)
	}
	cli("ingest", "testdata/people.csv", uri, "--partition-by", "day")
	var snap SnapshotView
	if err := json.Unmarshal([]byte(cli("snapshot", uri, "-o", "json")), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Table != uri || snap.NumRows != 5 || snap.NumFiles != 3 || len(snap.PartitionColumns) != 1 {
		t.Errorf("snapshot %+v", snap)
	}
	if out := cli("cat", uri, "--where", "day = DATE '2024-01-03'", "--format", "csv"); !strings.Contains(out, `5,"Eve, Jr.",88,2024-01-03`) {
		t.Errorf("cat: %s", out)
	}
	stream := m.URI("cli/events")
	cli("ingest", "testdata/events.ndjson", stream, "--epoch-rows", "2", "--query-id", "q")
	if out := cli("verify", "--exactly-once", stream); !strings.Contains(out, "query q: exactly once; 2 commit(s), epochs 0-1") {
		t.Errorf("exactly-once: %s", out)
	}
	cli("ingest", "testdata/people.csv", uri)
	if out := cli("optimize", uri); !strings.Contains(out, "compacted into 3") {
		t.Errorf("optimize: %s", out)
	}
	// Vacuum measures retention from the table's clock, and MinIO's
	// modification times are the server's: vacuum at the real time, not the
	// pinned one, which lies before every file MinIO holds.
	if out, errs, code := runCLIAt(t, time.Now, append([]string{"vacuum", uri, "--retain", "0h", "--force"}, s3...)...); code != 0 || !strings.Contains(out, "deleted 6 file(s)") {
		t.Errorf("vacuum: exit %d: %s%s", code, out, errs)
	}
	if out := cli("verify", uri); !strings.Contains(out, ": OK;") {
		t.Errorf("verify: %s", out)
	}
	// An unreachable endpoint is an error (exit 1), not a hang or a panic.
	if _, _, code := runCLI(t, "snapshot", m.URI("nothing"), "--endpoint", "http://127.0.0.1:1", "--path-style"); code != 1 {
		t.Errorf("unreachable endpoint: exit %d, want 1", code)
	}
}
