package txlog

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCheckpointRowsGenerated fails when checkpoint_rows.go is not what
// go generate makes of internal/ckgen/fields.go.
func TestCheckpointRowsGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out := filepath.Join(t.TempDir(), "rows.go")
	if b, err := exec.Command(goBin, "run", "./internal/ckgen", out).CombinedOutput(); err != nil {
		t.Fatalf("ckgen: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("checkpoint_rows.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("checkpoint_rows.go is stale: run go generate ./txlog")
	}
}
