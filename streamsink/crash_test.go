package streamsink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// The crash matrix: exactly-once proven by crashing a writer at every
// object-store call it makes.
//
// For each write path (the table's idempotent append, the sink's epochs,
// the sink's epochs with automatic and explicit checkpoints, an
// idempotent DELETE with deletion vectors per epoch, and the sink's
// upsert mode, a MERGE per epoch, copy-on-write and with deletion
// vectors: crash_upsert_test.go) one run of a
// 6-epoch stream on a faultstore.Store enumerates every call the writer makes,
// table open included. Then, for each call i and each phase (before the
// call is made, after it is made), a fresh scenario runs: the writer
// crashes at call i (FaultCrash: that call and every later one fail and
// its context ends, as a dead process does); a restarted writer on a
// fault-free view of the same store asks the table for its last committed
// epoch, deliberately replays the two epochs up to it (a source without
// proof of what landed) and finishes the stream. checkTable then proves
// the table holds every epoch exactly once, every acknowledged epoch
// survived the crash, and nothing the log references is missing.

const (
	crashQuery        = "crash-query"
	crashEpochs       = 6
	crashRowsPerEpoch = 20
	// crashCheckpointAfter is the epoch after which the checkpoint path
	// writes an explicit checkpoint (txlog.WriteCheckpoint).
	crashCheckpointAfter = 2
	// crashDoomedPerEpoch is how many extra rows per epoch the delete path's
	// pre-fill holds, for that epoch's DELETE to remove.
	crashDoomedPerEpoch = 3
)

var quiet = slog.New(slog.DiscardHandler)

// epochWriter is one way of writing a stream of epochs.
type epochWriter interface {
	// write writes epoch e; skipped reports that the table already held it.
	write(ctx context.Context, e int64, rows []value.Row) (skipped bool, err error)
	// last returns the newest epoch the table holds, -1 when none, after
	// reading the newest commits.
	last(ctx context.Context) (int64, error)
	// table returns the writer's current table version.
	table() *table.Table
}

// tableOpts are the options of every table a crash scenario opens: fast
// retries, no logs, one file written at a time (a deterministic sequence
// of calls).
func tableOpts(store objectstore.Store) []table.Option {
	return []table.Option{
		table.WithStore(store),
		// Checkpoints inside the epoch's commit, so that the enumerated
		// calls (the crash points) are the same in every run.
		table.WithSyncCheckpoints(),
		table.WithLogger(quiet),
		table.WithTxnOptions(txlog.WithBackoff(time.Millisecond, 5*time.Millisecond), txlog.WithLogger(quiet)),
	}
}

// appendWriter writes epochs with table.AppendRows and WithTxn: the
// table's own idempotent write.
type appendWriter struct{ tbl *table.Table }

func (w *appendWriter) write(ctx context.Context, e int64, rows []value.Row) (bool, error) {
	tbl, err := w.tbl.Refresh(ctx)
	if err != nil {
		return false, err
	}
	nt, err := tbl.AppendRows(ctx, rows, table.WithTxn(crashQuery, e), table.WithWriteConcurrency(1))
	if err != nil {
		w.tbl = tbl
		return false, err
	}
	w.tbl = nt
	return nt == tbl, nil
}

func (w *appendWriter) last(ctx context.Context) (int64, error) {
	tbl, err := w.tbl.Refresh(ctx)
	if err != nil {
		return -1, err
	}
	w.tbl = tbl
	return tbl.Snapshot().TxnVersion(crashQuery), nil
}

func (w *appendWriter) table() *table.Table { return w.tbl }

// sinkWriter writes epochs with Sink.WriteEpoch.
type sinkWriter struct{ s *Sink }

func (w *sinkWriter) write(ctx context.Context, e int64, rows []value.Row) (bool, error) {
	res, err := w.s.WriteEpoch(ctx, e, rows)
	if err != nil {
		return false, err
	}
	return res.Skipped, nil
}

func (w *sinkWriter) last(ctx context.Context) (int64, error) { return w.s.LastCommittedEpoch(ctx) }

func (w *sinkWriter) table() *table.Table { return w.s.Table() }

// deleteWriter writes epoch e as one idempotent DELETE (WithTxn) of the
// pre-filled rows doomed for e, on a table with deletion vectors: the rows
// of the epoch itself are in the table already (pre-filled).
type deleteWriter struct{ tbl *table.Table }

// doomedRows are the rows of the delete path's pre-fill that epoch e
// deletes: ids e*1000 + 500 + i, never ids of epochRows.
func doomedRows(e int64) []value.Row {
	rows := make([]value.Row, crashDoomedPerEpoch)
	for i := range rows {
		rows[i] = value.Row{e*1000 + 500 + int64(i), e, fmt.Sprintf("doomed-%d-%d", e, i)}
	}
	return rows
}

// prefillRows is the delete path's pre-fill, in one append (one file):
// every epoch's rows, each followed by its doomed rows.
func prefillRows() []value.Row {
	var rows []value.Row
	for e := range int64(crashEpochs) {
		rows = append(rows, rowsOf(e)...)
		rows = append(rows, doomedRows(e)...)
	}
	return rows
}

func (w *deleteWriter) write(ctx context.Context, e int64, _ []value.Row) (bool, error) {
	tbl, err := w.tbl.Refresh(ctx)
	if err != nil {
		return false, err
	}
	doomed := table.And(table.Col("epoch").Eq(e), table.Col("id").Ge(e*1000+500))
	nt, res, err := tbl.Delete(ctx, doomed, table.WithTxn(crashQuery, e))
	if err != nil {
		w.tbl = tbl
		return false, err
	}
	w.tbl = nt
	return !res.Committed, nil
}

func (w *deleteWriter) last(ctx context.Context) (int64, error) {
	tbl, err := w.tbl.Refresh(ctx)
	if err != nil {
		return -1, err
	}
	w.tbl = tbl
	return tbl.Snapshot().TxnVersion(crashQuery), nil
}

func (w *deleteWriter) table() *table.Table { return w.tbl }

// openDeleteWriter opens the table at version 0 and then refreshes it: the
// first writer's calls must be the same in every run (the crash points name
// them), and Open of the latest version fetches the pre-filled log's two
// commits concurrently, in no fixed order, where Refresh from version 0
// reads the one new commit.
func openDeleteWriter(ctx context.Context, store objectstore.Store) (epochWriter, error) {
	tbl, err := table.Open(ctx, "", append(tableOpts(store), table.AtVersion(0))...)
	if err != nil {
		return nil, err
	}
	if tbl, err = tbl.Refresh(ctx); err != nil {
		return nil, err
	}
	return &deleteWriter{tbl: tbl}, nil
}

// crashPath is one write path of the matrix.
type crashPath struct {
	name string
	// props are the table properties.
	props map[string]string
	// open starts a writer (a process start: it opens the table).
	open func(ctx context.Context, store objectstore.Store) (epochWriter, error)
	// explicitCheckpoint writes a checkpoint after epoch
	// crashCheckpointAfter.
	explicitCheckpoint bool
	// prefilled: the table starts with one append of prefillRows (version
	// 1, before the stream) and epoch e deletes doomedRows(e).
	prefilled bool
	// upsert: epoch e upserts upsertRows(e) by id (crash_upsert_test.go);
	// the table must hold the latest row per id of the epochs committed.
	upsert bool
	// newTable: there is no table before the stream; the sink of
	// CreateOrOpen creates it with epoch 0 (version 0), so a crash before
	// that commit must leave no table.
	newTable bool
	// byKind: a crash point is the nth call of one kind (op and key with
	// data and deletion vector file names cut, see callString), not the
	// nth call: the path reads several live files in the order of their
	// random names, so the kinds of the calls interleave differently from
	// run to run, while each kind's calls come in the same order.
	byKind bool
}

// rows returns the rows the path writes as epoch e.
func (p crashPath) rows(e int64) []value.Row {
	if p.upsert {
		return upsertRows(e)
	}
	return rowsOf(e)
}

// expected returns, after epochs 0..last committed, the epochs whose rows
// the table holds and the rows it holds beyond epochRows, per epoch.
func (p crashPath) expected(last int64) ([]int64, map[int64][]value.Row) {
	var held []int64
	extra := map[int64][]value.Row{}
	for e := range int64(crashEpochs) {
		switch {
		case p.prefilled:
			held = append(held, e)
			if e > last {
				extra[e] = doomedRows(e)
			}
		case e <= last:
			held = append(held, e)
		}
	}
	return held, extra
}

// versions is the table version after the whole stream.
func (p crashPath) versions() int64 {
	switch {
	case p.prefilled:
		return crashEpochs + 1
	case p.newTable:
		return crashEpochs - 1
	}
	return crashEpochs
}

func openAppendWriter(ctx context.Context, store objectstore.Store) (epochWriter, error) {
	tbl, err := table.Open(ctx, "", tableOpts(store)...)
	if err != nil {
		return nil, err
	}
	return &appendWriter{tbl: tbl}, nil
}

func openSinkWriter(ctx context.Context, store objectstore.Store) (epochWriter, error) {
	tbl, err := table.Open(ctx, "", tableOpts(store)...)
	if err != nil {
		return nil, err
	}
	s, err := New(tbl, crashQuery, WithLogger(quiet), WithWriteOptions(table.WithWriteConcurrency(1)))
	if err != nil {
		return nil, err
	}
	return &sinkWriter{s: s}, nil
}

// openNewTableSinkWriter is openSinkWriter through CreateOrOpen: on a store
// without a table, the first epoch creates it.
func openNewTableSinkWriter(ctx context.Context, store objectstore.Store) (epochWriter, error) {
	s, err := CreateOrOpen(ctx, "", crashQuery, eventSchema, []Option{WithLogger(quiet), WithWriteOptions(table.WithWriteConcurrency(1))}, tableOpts(store)...)
	if err != nil {
		return nil, err
	}
	return &sinkWriter{s: s}, nil
}

// openGroupWriter is openAppendWriter on a table opened
// table.WithGroupCommit: each epoch's append goes through the group
// committer (queue, batch goroutine, commit).
func openGroupWriter(ctx context.Context, store objectstore.Store) (epochWriter, error) {
	tbl, err := table.Open(ctx, "", append(tableOpts(store), table.WithGroupCommit())...)
	if err != nil {
		return nil, err
	}
	return &appendWriter{tbl: tbl}, nil
}

var crashPaths = []crashPath{
	{name: "append", open: openAppendWriter},
	{name: "epoch", open: openSinkWriter},
	{name: "checkpoint", open: openSinkWriter, explicitCheckpoint: true,
		props: map[string]string{txlog.PropCheckpointInterval: "2"}},
	{name: "delete", open: openDeleteWriter, prefilled: true,
		props: map[string]string{txlog.PropEnableDeletionVectors: "true"}},
	{name: "group append", open: openGroupWriter},
	upsertPath,
	upsertDVPath,
	{name: "new table", open: openNewTableSinkWriter, newTable: true},
}

// deletePath is the matrix's DELETE-with-deletion-vectors path.
var deletePath = crashPaths[3]

// crashEnv is a storage backend for the matrix.
type crashEnv struct {
	name string
	// newStore returns an empty store for one scenario.
	newStore func(t *testing.T) objectstore.Store
	// reopen returns a fresh, fault-free view of the same stored objects:
	// what a restarted process gets.
	reopen func(t *testing.T, s objectstore.Store) (objectstore.Store, error)
}

var memEnv = crashEnv{
	name:     "memory",
	newStore: func(t *testing.T) objectstore.Store { return objectstore.NewMem(t.Name()) },
	reopen:   func(_ *testing.T, s objectstore.Store) (objectstore.Store, error) { return s, nil },
}

func minioEnv(m *testenv.MinIO) crashEnv {
	return crashEnv{
		name:     "MinIO",
		newStore: func(t *testing.T) objectstore.Store { return m.NewStore(t) },
		reopen: func(t *testing.T, s objectstore.Store) (objectstore.Store, error) {
			// A new client (its own connections) on the same prefix.
			prefix := strings.TrimPrefix(s.URI(), "s3://"+m.Bucket+"/")
			return objectstore.NewS3(t.Context(), m.Bucket, prefix, m.S3Options()...)
		},
	}
}

// scenario is one run of the stream: a first writer with faults, then a
// restarted writer that finishes the stream.
type scenario struct {
	env    crashEnv
	path   crashPath
	faults []faultstore.Fault
	// retries is how often the first writer retries an epoch that failed
	// without a crash (lost replies).
	retries int
}

// outcome is what a scenario did and what its check found.
type outcome struct {
	calls   []faultstore.Call // the first writer's calls
	crashed bool
	acked   []int64 // epochs the first writer saw succeed
	errors  int     // failed epoch writes of the first writer without a crash
	// resumedAfter is the restarted writer's LastCommittedEpoch.
	resumedAfter int64
	check        *tableCheck
}

func rowsOf(e int64) []value.Row { return epochRows(e, crashRowsPerEpoch) }

// run runs the scenario on a new store. It may run on any goroutine: it
// reports through the outcome, never with t.Fatal.
func (sc scenario) run(t *testing.T) *outcome {
	ctx := t.Context()
	out := &outcome{check: &tableCheck{}}
	base := sc.env.newStore(t)
	var tbl *table.Table
	var err error
	if !sc.path.newTable {
		tbl, err = table.Create(ctx, "", eventSchema, append(tableOpts(base), table.WithProperties(sc.path.props))...)
		if err != nil {
			out.check.addf("create: %v", err)
			return out
		}
	}
	if sc.path.prefilled {
		if _, err := tbl.AppendRows(ctx, prefillRows(), table.WithWriteConcurrency(1)); err != nil {
			out.check.addf("pre-fill: %v", err)
			return out
		}
	}

	// The first writer: dies at the injected crash, or finishes.
	wctx, kill := context.WithCancel(ctx)
	defer kill()
	f := faultstore.New(base, faultstore.WithCrashHook(kill))
	f.Inject(sc.faults...)
	sc.firstWriter(wctx, f, out)
	kill()
	out.calls, out.crashed = f.Calls(), f.Crashed()

	// The restarted writer on a fault-free view of the same store.
	store, err := sc.env.reopen(t, base)
	if err != nil {
		out.check.addf("reopen: %v", err)
		return out
	}
	sc.restart(ctx, store, out)
	if len(out.check.problems) > 0 {
		return out
	}
	if sc.path.upsert {
		final := checkUpsertTable(ctx, store, crashQuery, crashEpochs, sc.path.versions())
		out.check.problems = append(out.check.problems, final.problems...)
		out.check.lost += final.lost
		out.check.duplicated += final.duplicated
		out.check.orphans = final.orphans
		return out
	}
	final := checkTable(ctx, store, crashQuery, crashEpochs, crashRowsPerEpoch, sc.path.versions())
	if sc.path.prefilled {
		checkDeletionVectors(ctx, store, final, crashEpochs*crashDoomedPerEpoch)
	}
	out.check.problems = append(out.check.problems, final.problems...)
	out.check.lost += final.lost
	out.check.duplicated += final.duplicated
	out.check.orphans = final.orphans
	return out
}

func (sc scenario) firstWriter(ctx context.Context, f *faultstore.Store, out *outcome) {
	w, err := sc.path.open(ctx, f)
	if err != nil {
		if !f.Crashed() {
			out.check.addf("first writer: open: %v", err)
		}
		return
	}
	for e := range int64(crashEpochs) {
		done := false
		for attempt := 0; attempt <= sc.retries && !done; attempt++ {
			skipped, err := w.write(ctx, e, sc.path.rows(e))
			switch {
			case f.Crashed():
				if err == nil {
					// The crash struck after the commit (while writing its
					// checkpoint): the epoch is committed and acknowledged.
					out.acked = append(out.acked, e)
				}
				return
			case err != nil:
				out.errors++
			case skipped && attempt == 0:
				out.check.addf("first writer: epoch %d skipped on its first write", e)
				return
			default:
				// A skip on a retry: the failed attempt had landed.
				out.acked = append(out.acked, e)
				done = true
			}
		}
		if !done {
			out.check.addf("first writer: epoch %d failed %d times without a crash", e, sc.retries+1)
			return
		}
		if sc.path.explicitCheckpoint && e == crashCheckpointAfter {
			// Checkpoints are optional: a failed one is not an epoch failure.
			if err := txlog.WriteCheckpoint(ctx, w.table().Snapshot()); err != nil && f.Crashed() {
				return
			}
		}
	}
}

func (sc scenario) restart(ctx context.Context, store objectstore.Store, out *outcome) {
	c := out.check
	w, err := sc.path.open(ctx, store)
	if err != nil {
		c.addf("restart: open: %v", err)
		return
	}
	last, err := w.last(ctx)
	if err != nil {
		c.addf("restart: last committed epoch: %v", err)
		return
	}
	out.resumedAfter = last
	// No acknowledged epoch may be lost; what the table says it holds, it
	// holds, whole.
	if n := len(out.acked); n > 0 && out.acked[n-1] > last {
		c.lost += int(out.acked[n-1]-last) * crashRowsPerEpoch
		c.addf("restart: table's last epoch %d, but epoch %d was acknowledged", last, out.acked[n-1])
	}
	switch {
	case w.table() == nil:
		// No epoch committed into a new table: there is none.
		if last != -1 || !sc.path.newTable {
			c.addf("restart: no table, last epoch %d", last)
		}
		if _, err := table.Open(ctx, "", table.WithStore(store)); !errors.Is(err, table.ErrTableNotFound) {
			c.addf("restart: a crash before the first commit left a table: %v", err)
		}
	case sc.path.upsert:
		// The table holds the latest row per id of epochs 0..last, whole.
		checkUpsertRows(ctx, c, w.table(), last)
	default:
		counts, err := epochCounts(ctx, w.table())
		if err != nil {
			c.addf("restart: %v", err)
			return
		}
		held, extra := sc.path.expected(last)
		checkEpochRows(c, counts, held, crashRowsPerEpoch, extra)
	}
	if len(c.problems) > 0 {
		return
	}
	// Replay the last two committed epochs (a source without proof), then
	// the rest of the stream.
	for e := max(0, last-1); e < crashEpochs; e++ {
		skipped, err := w.write(ctx, e, sc.path.rows(e))
		if err != nil {
			c.addf("restart: epoch %d: %v", e, err)
			return
		}
		if want := e <= last; skipped != want {
			c.addf("restart: epoch %d skipped=%v, want %v (last committed %d)", e, skipped, want, last)
		}
		if sc.path.explicitCheckpoint && e == crashCheckpointAfter && !skipped {
			if err := txlog.WriteCheckpoint(ctx, w.table().Snapshot()); err != nil {
				c.addf("restart: checkpoint: %v", err)
			}
		}
	}
}

// callString names a call for messages, data file names shortened.
func callString(c faultstore.Call) string {
	key, cut := kindPrefix(c.Key)
	if cut {
		key += "…"
	}
	return fmt.Sprintf("%s %s", c.Op, key)
}

// kindPrefix returns key up to and with the start of a data or deletion
// vector file name ("part-", "deletion_vector_"), and whether it cut it;
// other keys whole.
func kindPrefix(key string) (string, bool) {
	for _, p := range []string{"part-", "deletion_vector_"} {
		if i := strings.Index(key, p); i >= 0 {
			return key[:i] + p, true
		}
	}
	return key, false
}

// kindOrdinal returns the position (1-based) of calls[i] among the calls
// of its kind (same callString) in calls[:i+1].
func kindOrdinal(calls []faultstore.Call, i int) int {
	want, n := callString(calls[i]), 0
	for _, c := range calls[:i+1] {
		if callString(c) == want {
			n++
		}
	}
	return n
}

// nthOfKind returns the index in calls of the nth call of kind, -1 when
// there is none.
func nthOfKind(calls []faultstore.Call, kind string, n int) int {
	for i, c := range calls {
		if callString(c) == kind {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

// enumerate runs the path's stream without faults, twice, and returns the
// calls of the first writer; both runs must make the same calls, or the
// crash points would not name what they claim to.
func enumerate(t *testing.T, env crashEnv, path crashPath) []faultstore.Call {
	t.Helper()
	var runs [2][]string
	var calls []faultstore.Call
	for i := range runs {
		out := scenario{env: env, path: path}.run(t)
		if len(out.check.problems) > 0 || out.crashed || len(out.acked) != crashEpochs || out.resumedAfter != crashEpochs-1 {
			t.Fatalf("%s: fault-free run: crashed %v, acked %v, resumed after %d, problems:\n%s",
				path.name, out.crashed, out.acked, out.resumedAfter, strings.Join(out.check.problems, "\n"))
		}
		for _, c := range out.calls {
			runs[i] = append(runs[i], callString(c))
		}
		if path.byKind {
			// The same calls of each kind, in order; kinds may interleave
			// differently.
			slices.Sort(runs[i])
		}
		calls = out.calls
	}
	if strings.Join(runs[0], "\n") != strings.Join(runs[1], "\n") {
		t.Fatalf("%s: two fault-free runs made different calls:\n%s\n---\n%s", path.name, strings.Join(runs[0], "\n"), strings.Join(runs[1], "\n"))
	}
	return calls
}

// matrixStats accumulates the results of a matrix run.
type matrixStats struct {
	points     atomic.Int64
	lost       atomic.Int64
	duplicated atomic.Int64
	orphans    atomic.Int64
}

// pickFunc selects the crash points of a matrix run: call i (1-based) of
// the enumerated calls.
type pickFunc func(i int, c faultstore.Call) bool

func everyCall(int, faultstore.Call) bool { return true }

// writesAndEveryThirdRead picks every call that writes, and every third of
// the others.
func writesAndEveryThirdRead(i int, c faultstore.Call) bool {
	return c.Op == faultstore.OpPut || c.Op == faultstore.OpPutIfAbsent || i%3 == 0
}

// writes picks every call that writes.
func writes(_ int, c faultstore.Call) bool {
	return c.Op == faultstore.OpPut || c.Op == faultstore.OpPutIfAbsent
}

// checkpointPuts picks the writes of checkpoint files.
func checkpointPuts(_ int, c faultstore.Call) bool {
	return c.Op == faultstore.OpPut && strings.HasSuffix(c.Key, ".checkpoint.parquet")
}

// runMatrix crashes path's writer at every picked call (before and after
// it) with up to parallel scenarios at once, and reports each failing
// scenario. It returns the number of crash points run.
func runMatrix(t *testing.T, env crashEnv, path crashPath, pick pickFunc, parallel int, st *matrixStats) int {
	calls := enumerate(t, env, path)
	var (
		wg  sync.WaitGroup
		sem = make(chan struct{}, parallel)
		n   atomic.Int64
	)
	for i := 1; i <= len(calls); i++ {
		if !pick(i, calls[i-1]) {
			continue
		}
		for _, phase := range []faultstore.Phase{faultstore.Before, faultstore.After} {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				name := fmt.Sprintf("%s crash %s call %d (%s)", path.name, phaseName(phase), i, callString(calls[i-1]))
				fault := faultstore.Fault{Nth: i, Phase: phase, Kind: faultstore.Crash}
				kind, ord := callString(calls[i-1]), 0
				if path.byKind {
					ord = kindOrdinal(calls, i-1)
					name = fmt.Sprintf("%s crash %s call %d of kind %s", path.name, phaseName(phase), ord, kind)
					prefix, _ := kindPrefix(calls[i-1].Key)
					fault = faultstore.Fault{Op: calls[i-1].Op, KeyPrefix: prefix, Nth: ord, Phase: phase, Kind: faultstore.Crash}
				}
				sc := scenario{env: env, path: path, faults: []faultstore.Fault{fault}}
				out := sc.run(t)
				n.Add(1)
				st.points.Add(1)
				st.lost.Add(int64(out.check.lost))
				st.duplicated.Add(int64(out.check.duplicated))
				st.orphans.Add(int64(out.check.orphans))
				switch {
				case !out.crashed:
					t.Errorf("%s: the crash never struck (%d calls made)", name, len(out.calls))
				case path.byKind:
					if nthOfKind(out.calls, kind, ord) < 0 {
						t.Errorf("%s: no such call this time", name)
					}
				case callString(out.calls[i-1]) != kind:
					t.Errorf("%s: call %d was %s this time", name, i, callString(out.calls[i-1]))
				}
				if len(out.check.problems) > 0 {
					t.Errorf("%s: acked %v, resumed after %d:\n  %s", name, out.acked, out.resumedAfter, strings.Join(out.check.problems, "\n  "))
				}
			}()
		}
	}
	wg.Wait()
	return int(n.Load())
}

func phaseName(p faultstore.Phase) string {
	if p == faultstore.After {
		return "after"
	}
	return "before"
}

// TestCrashMatrix crashes every write path at every object-store call on
// the memory store, and at a selection of calls on MinIO (the streaming
// path at every write and every third read, the delete path at every
// write: its deletion vector files and commits, the checkpoint path at
// every checkpoint file write; S3 calls under the race detector are
// costly), and
// prints how many crash points it covered.
func TestCrashMatrix(t *testing.T) {
	var mem, s3 matrixStats
	var mu sync.Mutex
	memCounts, s3Counts := map[string]int{}, map[string]int{}
	memRan := false
	t.Run("memory", func(t *testing.T) {
		memRan = true
		for _, p := range crashPaths {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				n := runMatrix(t, memEnv, p, everyCall, 2, &mem)
				mu.Lock()
				memCounts[p.name] = n
				mu.Unlock()
			})
		}
	})
	if memRan && mem.points.Load() < 100 {
		t.Errorf("only %d crash points ran on the memory store", mem.points.Load())
	}
	t.Run("MinIO", func(t *testing.T) {
		if testing.Short() {
			t.Skip("short: MinIO crash points")
		}
		env := minioEnv(testenv.StartMinIO(t))
		s3Counts["epoch"] = runMatrix(t, env, crashPaths[1], writesAndEveryThirdRead, 4, &s3)
		s3Counts["checkpoint"] = runMatrix(t, env, crashPaths[2], checkpointPuts, 4, &s3)
		s3Counts["delete"] = runMatrix(t, env, deletePath, writes, 4, &s3)
		s3Counts["upsert"] = runMatrix(t, env, upsertDVPath, writes, 4, &s3)
	})
	summary := fmt.Sprintf("crash matrix: memory: %d points (append %d, epoch %d, checkpoint %d, delete %d, group append %d, upsert %d, upsert-dv %d, new table %d), MinIO: %d points (epoch %d, checkpoint %d, delete %d, upsert-dv %d); %d lost, %d duplicated, %d orphan files never referenced",
		mem.points.Load(), memCounts["append"], memCounts["epoch"], memCounts["checkpoint"], memCounts["delete"], memCounts["group append"], memCounts["upsert"], memCounts["upsert-dv"], memCounts["new table"],
		s3.points.Load(), s3Counts["epoch"], s3Counts["checkpoint"], s3Counts["delete"], s3Counts["upsert"],
		mem.lost.Load()+s3.lost.Load(), mem.duplicated.Load()+s3.duplicated.Load(), mem.orphans.Load()+s3.orphans.Load())
	t.Log(summary)
	fmt.Println(summary)
}

// Lost replies: the call took effect but the writer never heard. The
// writer must not double-write: the commit PUT's lost reply is resolved by
// reading the version back (its own txnId), so the epoch succeeds once; a
// lost reply the writer cannot resolve fails the epoch, and the writer's
// retry of it is skipped or lands once.
func TestLostReplies(t *testing.T) {
	commitPut := func(v int64, kind faultstore.Kind) faultstore.Fault {
		return faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.CommitKey(v), Nth: 1, Phase: faultstore.After, Kind: kind}
	}
	tests := []struct {
		name        string
		path        crashPath
		faults      []faultstore.Fault
		wantErrors  int // failed epoch writes the writer retried
		wantOrphans int
	}{
		{name: "epoch: commit reply lost at version 1", path: crashPaths[1], faults: []faultstore.Fault{commitPut(1, faultstore.DropReply)}},
		{name: "epoch: commit reply lost at version 4", path: crashPaths[1], faults: []faultstore.Fault{commitPut(4, faultstore.DropReply)}},
		{name: "epoch: commit reply lost at every version", path: crashPaths[1], faults: []faultstore.Fault{
			commitPut(1, faultstore.DropReply), commitPut(2, faultstore.DropReply), commitPut(3, faultstore.DropReply),
			commitPut(4, faultstore.DropReply), commitPut(5, faultstore.DropReply), commitPut(6, faultstore.DropReply)}},
		{name: "epoch: commit reply lost twice at one version", path: crashPaths[1], faults: []faultstore.Fault{
			commitPut(3, faultstore.DropReply),
			{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.CommitKey(3), Nth: 2, Kind: faultstore.DropReply}}},
		{name: "epoch: commit answered 503 after it landed", path: crashPaths[1], faults: []faultstore.Fault{
			{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.CommitKey(2), Nth: 1, Phase: faultstore.After, Kind: faultstore.Status, Status: 503}}},
		{name: "epoch: commit refused 503 before it landed", path: crashPaths[1], faults: []faultstore.Fault{
			{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.CommitKey(2), Nth: 1, Kind: faultstore.Status, Status: 503}}},
		// The commit loop reads the version back again after a failed
		// read-back, finds its txnId and reports success.
		{name: "epoch: commit reply lost, then its read-back fails once", path: crashPaths[1], faults: []faultstore.Fault{
			commitPut(3, faultstore.DropReply),
			{Op: faultstore.OpGet, KeyPrefix: txlog.CommitKey(3), Nth: 1, Kind: faultstore.Status, Status: 503}}},
		// The failed write deletes its files, the one whose reply was lost
		// included: no orphan is left.
		{name: "epoch: data file reply lost", path: crashPaths[1], wantErrors: 1, faults: []faultstore.Fault{
			{Op: faultstore.OpPut, KeyPrefix: "part-", Nth: 2, Phase: faultstore.After, Kind: faultstore.DropReply}}},
		{name: "append: commit reply lost", path: crashPaths[0], faults: []faultstore.Fault{commitPut(3, faultstore.DropReply)}},
		{name: "append: commit reply lost, then its read-back fails once", path: crashPaths[0], faults: []faultstore.Fault{
			commitPut(2, faultstore.DropReply),
			{Op: faultstore.OpGet, KeyPrefix: txlog.CommitKey(2), Nth: 1, Kind: faultstore.Status, Status: 503}}},
		{name: "checkpoint: reply lost on the commit that checkpoints", path: crashPaths[2], faults: []faultstore.Fault{commitPut(2, faultstore.DropReply)}},
		{name: "checkpoint: checkpoint file reply lost", path: crashPaths[2], faults: []faultstore.Fault{
			{Op: faultstore.OpPut, KeyPrefix: txlog.CheckpointKey(4), Nth: 1, Phase: faultstore.After, Kind: faultstore.DropReply}}},
		{name: "checkpoint: _last_checkpoint write fails", path: crashPaths[2], faults: []faultstore.Fault{
			{Op: faultstore.OpPut, KeyPrefix: txlog.LastCheckpointKey, Nth: 1, Kind: faultstore.Fail}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := scenario{env: memEnv, path: tc.path, faults: tc.faults, retries: 2}.run(t)
			if len(out.check.problems) > 0 {
				t.Fatalf("problems:\n  %s", strings.Join(out.check.problems, "\n  "))
			}
			if out.crashed {
				t.Fatal("crashed")
			}
			if len(out.acked) != crashEpochs || out.resumedAfter != crashEpochs-1 {
				t.Fatalf("acked %v, restart resumed after %d; want every epoch acknowledged", out.acked, out.resumedAfter)
			}
			if out.errors != tc.wantErrors {
				t.Errorf("%d failed epoch writes, want %d", out.errors, tc.wantErrors)
			}
			if out.check.orphans != tc.wantOrphans {
				t.Errorf("%d orphan data files, want %d", out.check.orphans, tc.wantOrphans)
			}
		})
	}
}

// The checker must catch what a broken writer leaves: a test that cannot
// fail proves nothing.
func TestCrashCheckerFindsViolations(t *testing.T) {
	ctx := context.Background()
	// build writes epochs with plain appends (no txn) in the given order.
	build := func(t *testing.T, epochs ...int64) (*objectstore.Mem, *table.Table) {
		mem := objectstore.NewMem(t.Name())
		tbl, err := table.Create(ctx, "", eventSchema, tableOpts(mem)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range epochs {
			if tbl, err = tbl.AppendRows(ctx, rowsOf(e), table.WithTxn(crashQuery, e)); err != nil {
				t.Fatal(err)
			}
		}
		return mem, tbl
	}
	// buildDelete makes a delete-path table (pre-filled, deletion vectors
	// unless cow) and deletes the doomed rows of the given epochs with
	// their txn; skip lists epochs that get their txn committed without
	// the delete.
	buildDelete := func(t *testing.T, cow bool, skip int64, epochs ...int64) (*objectstore.Mem, *table.Table) {
		mem := objectstore.NewMem(t.Name())
		props := deletePath.props
		if cow {
			props = nil
		}
		tbl, err := table.Create(ctx, "", eventSchema, append(tableOpts(mem), table.WithProperties(props))...)
		if err != nil {
			t.Fatal(err)
		}
		if tbl, err = tbl.AppendRows(ctx, prefillRows()); err != nil {
			t.Fatal(err)
		}
		for _, e := range epochs {
			if e == skip {
				tx := tbl.NewTransaction("DELETE")
				tx.Add(txlog.Action{Txn: &txlog.Txn{AppID: crashQuery, Version: e}})
				if tbl, _, err = tbl.Commit(ctx, tx); err != nil {
					t.Fatal(err)
				}
				continue
			}
			w := &deleteWriter{tbl: tbl}
			if skipped, err := w.write(ctx, e, nil); err != nil || skipped {
				t.Fatalf("delete epoch %d: skipped %v, %v", e, skipped, err)
			}
			tbl = w.tbl
		}
		return mem, tbl
	}
	tests := []struct {
		name        string
		setup       func(t *testing.T) objectstore.Store
		wantLost    int
		wantDup     int
		wantProblem string
	}{
		{name: "delete path: correct table", setup: func(t *testing.T) objectstore.Store {
			mem, _ := buildDelete(t, false, -1, 0, 1, 2, 3, 4, 5)
			return mem
		}},
		{name: "delete path: an epoch committed without deleting its rows", wantLost: -1,
			wantProblem: "epoch 3: 23 distinct row ids, want 20", setup: func(t *testing.T) objectstore.Store {
				mem, _ := buildDelete(t, false, 3, 0, 1, 2, 3, 4, 5)
				return mem
			}},
		{name: "delete path: rows deleted by rewriting files, not deletion vectors", wantLost: -1,
			wantProblem: "live deletion vectors delete 0 rows, want 18", setup: func(t *testing.T) objectstore.Store {
				mem, _ := buildDelete(t, true, -1, 0, 1, 2, 3, 4, 5)
				return mem
			}},
		{name: "delete path: live deletion vector file deleted", wantLost: -1,
			wantProblem: "referenced deletion vector file", setup: func(t *testing.T) objectstore.Store {
				mem, tbl := buildDelete(t, false, -1, 0, 1, 2, 3, 4, 5)
				key := dvKey(&tableCheck{}, tbl.Snapshot().Files()[0])
				if key == "" {
					t.Fatal("no deletion vector file")
				}
				if err := mem.Delete(ctx, key); err != nil {
					t.Fatal(err)
				}
				return mem
			}},
		{"correct table", func(t *testing.T) objectstore.Store {
			mem, _ := build(t, 0, 1, 2, 3, 4, 5)
			return mem
		}, 0, 0, ""},
		{"epoch written twice (a naive writer resuming after a lost ack)", func(t *testing.T) objectstore.Store {
			mem, tbl := build(t, 0, 1, 2, 3, 4, 5)
			if _, err := tbl.AppendRows(ctx, rowsOf(4)); err != nil { // no txn: not skipped
				t.Fatal(err)
			}
			return mem
		}, 0, crashRowsPerEpoch, "present 2 times"},
		{"epoch missing", func(t *testing.T) objectstore.Store {
			mem, _ := build(t, 0, 1, 2, 4, 5)
			return mem
		}, crashRowsPerEpoch, 0, "epoch 3: no rows"},
		{"referenced data file deleted", func(t *testing.T) objectstore.Store {
			mem, tbl := build(t, 0, 1, 2, 3, 4, 5)
			if err := mem.Delete(ctx, txlog.DecodePath(tbl.Snapshot().Files()[0].Path)); err != nil {
				t.Fatal(err)
			}
			return mem
		}, -1, 0, "does not exist"},
		{"log gap", func(t *testing.T) objectstore.Store {
			mem, _ := build(t, 0, 1, 2, 3, 4, 5)
			// Move commit 6 to 7: the log skips version 6.
			data, err := mem.Get(ctx, txlog.CommitKey(6), objectstore.FullObject)
			if err != nil {
				t.Fatal(err)
			}
			_ = mem.Put(ctx, txlog.CommitKey(7), data)
			_ = mem.Delete(ctx, txlog.CommitKey(6))
			return mem
		}, -1, 0, "not contiguous"},
		{"orphan that a commit once referenced", func(t *testing.T) objectstore.Store {
			mem, tbl := build(t, 0, 1, 2, 3, 4, 5)
			f := tbl.Snapshot().Files()[0]
			tx := tbl.NewTransaction("DELETE")
			tx.Add(txlog.Action{Remove: f.RemoveAt(time.Now().UnixMilli())})
			if _, _, err := tbl.Commit(ctx, tx); err != nil {
				t.Fatal(err)
			}
			return mem
		}, -1, 0, "was referenced by a commit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := tc.setup(t)
			// A delete-path table has one more version, the pre-fill, and its
			// deletion vectors are checked too.
			prefilled := strings.HasPrefix(tc.name, "delete path:")
			wantVersion := int64(crashEpochs)
			if prefilled {
				wantVersion++
			}
			c := checkTable(ctx, store, crashQuery, crashEpochs, crashRowsPerEpoch, wantVersion)
			if prefilled {
				checkDeletionVectors(ctx, store, c, crashEpochs*crashDoomedPerEpoch)
			}
			got := strings.Join(c.problems, "\n")
			if tc.wantProblem == "" {
				if got != "" {
					t.Fatalf("problems in a correct table:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, tc.wantProblem) {
				t.Fatalf("problems do not mention %q:\n%s", tc.wantProblem, got)
			}
			if tc.wantLost >= 0 && c.lost != tc.wantLost {
				t.Errorf("lost %d, want %d", c.lost, tc.wantLost)
			}
			if c.duplicated != tc.wantDup {
				t.Errorf("duplicated %d, want %d", c.duplicated, tc.wantDup)
			}
		})
	}
}
