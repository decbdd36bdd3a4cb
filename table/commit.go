package table

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/deltakit/deltakit/txlog"
)

// operation is one write to the table as it is committed: Spark's
// commitInfo.operation name, its operationParameters and operationMetrics
// (Spark's keys), the actions, and what it read (recorded on tx, for
// conflict detection). Every operation is committed by commitOperation.
type operation struct {
	name    string
	tx      *txlog.Transaction
	params  map[string]string
	metrics map[string]string
	adds    []*txlog.Add
	removes []*txlog.Remove
	// written are the store keys of data and deletion-vector files this
	// operation wrote: deleted again when its commit definitely fails.
	written []string
	// txn is the WithTxn action (nil without WithTxn); skip is true when
	// the table already holds that txn version: nothing is committed.
	txn   *txlog.Txn
	skip  bool
	start time.Time
}

// begin starts an operation on t: it refuses, before any file is written, a
// table deltakit cannot write (unsupported writer features; spec "Table
// Features") and, when removesData is set, an append-only table
// (ErrAppendOnly). With WithTxn it records the appId as read and marks the
// operation skipped when its version is already committed.
func (t *Table) begin(name string, removesData bool, cfg writeConfig) (*operation, error) {
	if err := t.checkWritable(nil); err != nil {
		return nil, err
	}
	if removesData && t.snap.Metadata().AppendOnly() {
		return nil, fmt.Errorf("table: %s %s: %w", strings.ToLower(name), t.URI(), ErrAppendOnly)
	}
	op := &operation{name: name, tx: t.NewTransaction(name), start: t.cfg.now()}
	if cfg.txnSet {
		if v := op.tx.TxnVersion(cfg.txnAppID); v >= cfg.txnVersion {
			op.skip = true
			t.cfg.logger.Debug("table: operation skipped, txn version already committed",
				"operation", name, "appId", cfg.txnAppID, "version", cfg.txnVersion, "txnVersion", v, "table", t.URI())
		}
		a := t.txnAction(cfg)
		op.txn = a.Txn
	}
	return op, nil
}

// elapsedMs returns the milliseconds since the operation began, as Spark's
// executionTimeMs.
func (op *operation) elapsedMs() string {
	return strconv.FormatInt(time.Since(op.start).Milliseconds(), 10)
}

// commitOperation commits op as the next table version: its txn, removes
// and adds, commitInfo with its parameters and metrics. The protocol's
// write-side rules are checked by the transaction before anything is
// written (txlog.Transaction.Commit: writer features, delta.appendOnly,
// no action twice); conflicts with concurrent commits follow Delta's rules
// (*txlog.ConflictError). When the commit definitely did not land (a
// conflict, or a refusal), the files op wrote are deleted (best effort).
// Errors name the operation and the table.
func (t *Table) commitOperation(ctx context.Context, op *operation) (*Table, *txlog.CommitResult, error) {
	tx := op.tx
	if op.txn != nil {
		tx.Add(txlog.Action{Txn: op.txn})
	}
	for _, r := range op.removes {
		tx.Add(txlog.Action{Remove: r})
	}
	for _, a := range op.adds {
		tx.Add(txlog.Action{Add: a})
	}
	tx.SetOperationParameters(op.params)
	tx.SetOperationMetrics(op.metrics)
	nt, res, err := t.Commit(ctx, tx)
	if err != nil {
		if definitelyNotCommitted(err) {
			deleteFiles(t.store, op.written, t.cfg.logger)
		}
		return nil, nil, fmt.Errorf("table: %s %s: %w", strings.ToLower(op.name), t.URI(), err)
	}
	return nt, res, nil
}

// metricsOf renders counts as Spark's string-valued operationMetrics.
func metricsOf(m map[string]int64) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = strconv.FormatInt(v, 10)
	}
	return out
}

// paramsWith returns params plus WithOperationParameters' (which win).
func paramsWith(params map[string]string, cfg writeConfig) map[string]string {
	maps.Copy(params, cfg.params)
	return params
}

// definitelyNotCommitted reports whether a commit error means that no
// version was created: a conflict, or a commit refused before its PUT.
// Other failures (store errors, exhausted retries) may hide a commit that
// landed, whose files must stay.
func definitelyNotCommitted(err error) bool {
	var ce *txlog.ConflictError
	return errors.As(err, &ce) || errors.Is(err, txlog.ErrAppendOnly) ||
		errors.Is(err, txlog.ErrUnsupportedFeature) || errors.Is(err, txlog.ErrUnsupportedProtocol)
}
