package txlog

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCheckpointRowsGenerated fails when checkpoint_rows.go or
// checkpoint_rows_back_test.go is not what go generate makes of
// internal/ckgen/fields.go.
func TestCheckpointRowsGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	rows, testRows := filepath.Join(dir, "rows.go"), filepath.Join(dir, "rows_test.go")
	if b, err := exec.Command(goBin, "run", "./internal/ckgen", rows, testRows).CombinedOutput(); err != nil {
		t.Fatalf("ckgen: %v\n%s", err, b)
	}
	for gen, file := range map[string]string{rows: "checkpoint_rows.go", testRows: "checkpoint_rows_back_test.go"} {
		got, err := os.ReadFile(gen)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run go generate ./txlog", file)
		}
	}
}
