package table

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/txlog"
)

// A commit that fails definitely (the version file could not be stored: a
// full disk) leaves no data file of the write behind.
func TestDefiniteCommitFailureDeletesDataFiles(t *testing.T) {
	ctx := context.Background()
	tbl, mem := maintTable(t, false, nil)
	f := faultstore.New(mem)
	ft, err := Open(ctx, "", WithStore(f), WithTxnOptions(txlog.WithoutAutoCheckpoint()))
	if err != nil {
		t.Fatal(err)
	}
	f.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.LogPrefix, Nth: 1, Kind: faultstore.Fail, Err: syscall.ENOSPC})
	_, err = ft.AppendRows(ctx, maintRowsFor(0, 10, "ams"))
	if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, objectstore.ErrNotStored) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if keys := dataKeys(t, mem); len(keys) != 0 {
		t.Fatalf("data files left after a definite commit failure: %v", keys)
	}
	if re, _ := tbl.Refresh(ctx); re.Version() != tbl.Version() {
		t.Fatalf("version %d committed", re.Version())
	}
}
