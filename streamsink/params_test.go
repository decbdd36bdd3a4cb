package streamsink

import (
	"context"
	"strconv"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// TestWithOperationParameters: the extra parameters land in every epoch's
// commitInfo next to outputMode, queryId and epochId, which stay the sink's.
func TestWithOperationParameters(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	sink, err := New(newTable(t, mem), "q",
		WithOperationParameters(map[string]string{"epochRows": "3", "epochId": "99"}),
		WithOperationParameters(map[string]string{"source": "a.csv"}))
	if err != nil {
		t.Fatal(err)
	}
	for epoch := range int64(2) {
		res, err := sink.WriteEpoch(ctx, epoch, epochRows(epoch, 3))
		if err != nil {
			t.Fatal(err)
		}
		actions, err := txlog.ReadCommit(ctx, mem, res.Version)
		if err != nil {
			t.Fatal(err)
		}
		var ci *txlog.CommitInfo
		for _, a := range actions {
			if a.CommitInfo != nil {
				ci = a.CommitInfo
			}
		}
		if ci == nil {
			t.Fatalf("version %d: no commitInfo", res.Version)
		}
		want := map[string]string{"outputMode": "Append", "queryId": "q", "epochId": strconv.FormatInt(epoch, 10), "epochRows": "3", "source": "a.csv"}
		if len(ci.OperationParameters) != len(want) {
			t.Errorf("epoch %d: operationParameters %v, want %v", epoch, ci.OperationParameters, want)
		}
		for k, v := range want {
			if got, _ := ci.OperationParameters[k].(string); got != v {
				t.Errorf("epoch %d: operationParameters[%q] = %v, want %q", epoch, k, ci.OperationParameters[k], v)
			}
		}
	}
}
