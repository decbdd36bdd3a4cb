package txlog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltakit/deltakit/internal/testsupport"
)

// A checkpoint whose page header claims a huge page is refused as corrupt
// before the Parquet decoder allocates anything (one changed byte once made
// parquet-go ask for 32 GB and kill the process).
func TestCheckpointWithDamagedPageHeader(t *testing.T) {
	file := filepath.Join(testsupport.CorpusDir(t), "deltars__simple_table_with_checkpoint", "_delta_log", "00000000000000000010.checkpoint.parquet")
	data, err := os.ReadFile(file)
	if err != nil {
		testsupport.Absent(t, "corpus file: %v", err)
	}
	if err := ReadCheckpointParquet(file, 10, data, true, func(*Action) {}); err != nil {
		t.Fatalf("intact checkpoint: %v", err)
	}
	if len(data) <= 4487 || data[4487] != 0x02 {
		t.Fatalf("byte 4487 of %s is not the page-size byte this test changes", file)
	}
	data[4487] = 0x0e
	err = ReadCheckpointParquet(file, 10, data, true, func(*Action) {})
	var cle *CorruptLogError
	if !errors.As(err, &cle) || cle.Version != 10 {
		t.Fatalf("damaged checkpoint: %v, want a *CorruptLogError for version 10", err)
	}
}
