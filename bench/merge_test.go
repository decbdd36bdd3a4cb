package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// TestMergeBenchCopyHasCheckpoint: the delta-rs copy of P11's table is
// taken after the background checkpoint that the last Append made due
// (version 10 at delta.checkpointInterval 10) is written, so the copy holds
// that checkpoint, byte for byte, and a _last_checkpoint naming it. Before
// newMergeBench waited for it, the copy lacked the checkpoint (no hint, or
// sometimes a hint naming version 10 or 100 without its file: delta-rs
// "Had a _last_checkpoint hint but didn't find any checkpoints").
func TestMergeBenchCopyHasCheckpoint(t *testing.T) {
	ctx := t.Context()
	const dates = 10
	m, err := newMergeBench(ctx, t.TempDir(), 2_000, dates)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.close(ctx); err != nil {
			t.Error(err)
		}
	})
	if m.rsBase != dates {
		t.Fatalf("rsBase %d, want %d", m.rsBase, dates)
	}
	src, dst := filepath.Join(m.dir, "deltakit-cow"), m.rsDir
	hint, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(txlog.LastCheckpointKey)))
	if err != nil {
		t.Fatalf("the copy has no _last_checkpoint: %v", err)
	}
	var lc txlog.LastCheckpoint
	if err := json.Unmarshal(hint, &lc); err != nil {
		t.Fatalf("the copy's _last_checkpoint %q: %v", hint, err)
	}
	if lc.Version != dates {
		t.Fatalf("the copy's _last_checkpoint names version %d, want %d", lc.Version, dates)
	}
	key := filepath.FromSlash(txlog.CheckpointKey(lc.Version))
	want, err := os.ReadFile(filepath.Join(src, key))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dst, key))
	if err != nil {
		t.Fatalf("the copy's hint names a checkpoint it lacks: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the copy's checkpoint has %d bytes, the table's %d", len(got), len(want))
	}
	tbl, err := table.Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Version() != dates || tbl.Snapshot().NumFiles() != dates {
		t.Fatalf("deltakit reads the copy at version %d with %d files, want %d and %d", tbl.Version(), tbl.Snapshot().NumFiles(), dates, dates)
	}
	wd, _ := os.Getwd()
	py := FindPython(wd)
	if py == "" {
		t.Log("no Python venv with deltalake: delta-rs not asked")
		return
	}
	out, err := exec.CommandContext(ctx, py, "-c",
		"import sys; from deltalake import DeltaTable; print(DeltaTable(sys.argv[1]).version())", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("delta-rs opens the copy: %v: %s", err, out)
	}
	if v := strings.TrimSpace(string(out)); v != "10" {
		t.Fatalf("delta-rs reads the copy at version %s, want 10", v)
	}
}
