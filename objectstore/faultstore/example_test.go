package faultstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// A fault-injecting store for tests: wrap any store with New, plan
// faults with Inject, and hand it to the code under test (here a table,
// with table.WithStore). The reply of the first commit's put is dropped
// after the commit file was written, as a timeout after the request
// reached the server would: the commit loop finds its own commit and the
// append lands exactly once.
func ExampleNew() {
	ctx := context.Background()
	faulty := faultstore.New(objectstore.NewMem("faulty-example"))
	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	tbl, err := table.Create(ctx, "", sch, table.WithStore(faulty))
	if err != nil {
		log.Fatal(err)
	}

	faulty.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.CommitKey(1),
		Nth: 1, Phase: faultstore.After, Kind: faultstore.DropReply})
	tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(1)}, {int64(2)}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", tbl.Version(), "files", len(tbl.Snapshot().Files()))

	// A writer that dies: every call after the crash fails with ErrCrashed.
	faulty.Inject(faultstore.Fault{Op: faultstore.OpPut, Nth: 1, Phase: faultstore.Before, Kind: faultstore.Crash})
	_, err = tbl.AppendRows(ctx, []value.Row{{int64(3)}})
	fmt.Println("crashed:", errors.Is(err, faultstore.ErrCrashed), faulty.Crashed())

	// The table as another process sees it: the crashed append left nothing.
	again, err := table.Open(ctx, "", table.WithStore(faulty.Inner()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", again.Version())
	// Output:
	// version 1 files 1
	// crashed: true true
	// version 1
}
