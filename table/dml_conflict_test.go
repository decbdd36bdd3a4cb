package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// Conflict tests of DELETE, UPDATE and RESTORE: two operations start from
// the same snapshot, the first commits, the second must then fail with
// Spark's conflict kind (WriteSerializable) or succeed on its retry, and
// the table's rows must equal a reference computed from the inputs. Each
// runs on the memory store and on MinIO.

// dmlBackends runs run on the memory store and, unless -short, on MinIO
// (one server for all of run's stores).
func dmlBackends(t *testing.T, run func(t *testing.T, newStore func(t *testing.T) objectstore.Store)) {
	t.Run("memory", func(t *testing.T) {
		run(t, func(t *testing.T) objectstore.Store { return objectstore.NewMem(t.Name()) })
	})
	t.Run("MinIO", func(t *testing.T) {
		if testing.Short() {
			t.Skip("short: MinIO")
		}
		m := testenv.StartMinIO(t)
		run(t, func(t *testing.T) objectstore.Store { return m.NewStore(t) })
	})
}

// conflictTable creates a maintSchema table on store with fast retries and
// no automatic checkpoints.
func conflictTable(t *testing.T, store objectstore.Store, partitioned, dv bool) *Table {
	t.Helper()
	opts := []Option{WithStore(store), WithTxnOptions(txlog.WithoutAutoCheckpoint(), txlog.WithBackoff(time.Millisecond, 10*time.Millisecond))}
	if partitioned {
		opts = append(opts, WithPartitionColumns("city"))
	}
	if dv {
		opts = append(opts, WithProperties(dvProps))
	}
	tbl, err := Create(context.Background(), "", maintSchema(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// dmlOp is one operation of a conflict case: run commits it on tbl (the
// shared snapshot); apply is its effect on the reference rows. Rows with
// id >= 1000 are appended by the cases, never in the shared snapshot: a
// DELETE or UPDATE leaves them alone, as it did not read them.
type dmlOp struct {
	name  string
	run   func(ctx context.Context, tbl *Table) error
	apply func(rows []value.Row) []value.Row
}

func inSnapshot(r value.Row) bool { return r[0].(int64) < 1000 }

func opDelete(where Expr, match func(value.Row) bool) dmlOp {
	return dmlOp{
		name: "DELETE " + exprString(where),
		run: func(ctx context.Context, tbl *Table) error {
			_, res, err := tbl.Delete(ctx, where)
			if err == nil && !res.Committed {
				return errors.New("delete committed nothing")
			}
			return err
		},
		apply: func(rows []value.Row) []value.Row {
			return slices.DeleteFunc(slices.Clone(rows), func(r value.Row) bool { return inSnapshot(r) && match(r) })
		},
	}
}

// opUpdateV sets v to val where the predicate matches.
func opUpdateV(where Expr, match func(value.Row) bool, val float64) dmlOp {
	return dmlOp{
		name: fmt.Sprintf("UPDATE SET v = %v WHERE %s", val, exprString(where)),
		run: func(ctx context.Context, tbl *Table) error {
			_, res, err := tbl.Update(ctx, where, map[string]Value{"v": Lit(val)})
			if err == nil && !res.Committed {
				return errors.New("update committed nothing")
			}
			return err
		},
		apply: func(rows []value.Row) []value.Row {
			out := make([]value.Row, len(rows))
			for i, r := range rows {
				if inSnapshot(r) && match(r) {
					r = value.Row{r[0], r[1], val}
				}
				out[i] = r
			}
			return out
		},
	}
}

// opMoveCity updates city from one value to another (moves the rows to
// another partition of a partitioned table).
func opMoveCity(from, to string) dmlOp {
	return dmlOp{
		name: fmt.Sprintf("UPDATE SET city = %s WHERE city = %s", to, from),
		run: func(ctx context.Context, tbl *Table) error {
			_, _, err := tbl.Update(ctx, Col("city").Eq(from), map[string]Value{"city": Lit(to)})
			return err
		},
		apply: func(rows []value.Row) []value.Row {
			out := make([]value.Row, len(rows))
			for i, r := range rows {
				if inSnapshot(r) && r[1] == from {
					r = value.Row{r[0], to, r[2]}
				}
				out[i] = r
			}
			return out
		},
	}
}

func opAppend(rows []value.Row) dmlOp {
	return dmlOp{
		name: fmt.Sprintf("append of %d rows", len(rows)),
		run: func(ctx context.Context, tbl *Table) error {
			_, err := tbl.AppendRows(ctx, rows)
			return err
		},
		apply: func(before []value.Row) []value.Row { return slices.Concat(before, rows) },
	}
}

// opReplaceCity overwrites partition city with rows (replaceWhere).
func opReplaceCity(city string, rows []value.Row) dmlOp {
	return dmlOp{
		name: "overwrite replaceWhere city = " + city,
		run: func(ctx context.Context, tbl *Table) error {
			_, err := tbl.OverwriteRows(ctx, rows, WithReplaceWhere(Col("city").Eq(city)))
			return err
		},
		apply: func(before []value.Row) []value.Row {
			kept := slices.DeleteFunc(slices.Clone(before), func(r value.Row) bool { return r[1] == city })
			return slices.Concat(kept, rows)
		},
	}
}

// opRestore restores version v, whose rows are rowsAt.
func opRestore(v int64, rowsAt []value.Row) dmlOp {
	return dmlOp{
		name: fmt.Sprintf("RESTORE VERSION AS OF %d", v),
		run: func(ctx context.Context, tbl *Table) error {
			_, res, err := tbl.Restore(ctx, ToVersion(v))
			if err == nil && !res.Committed {
				return errors.New("restore committed nothing")
			}
			return err
		},
		apply: func([]value.Row) []value.Row { return slices.Clone(rowsAt) },
	}
}

// opSetProperty changes the table metadata (ALTER TABLE SET TBLPROPERTIES).
func opSetProperty(key, val string) dmlOp {
	return dmlOp{
		name: "SET TBLPROPERTIES " + key,
		run: func(ctx context.Context, tbl *Table) error {
			tx := tbl.NewTransaction("SET TBLPROPERTIES")
			m := tbl.Snapshot().Metadata().Clone()
			if m.Configuration == nil {
				m.Configuration = map[string]string{}
			}
			m.Configuration[key] = val
			tx.UpdateMetadata(m)
			_, _, err := tbl.Commit(ctx, tx)
			return err
		},
		apply: slices.Clone[[]value.Row],
	}
}

// sortedRows renders reference rows as maintScan renders a table.
func sortedRows(rows []value.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprint(r...)
	}
	slices.Sort(out)
	return out
}

var conflictKinds = []error{txlog.ErrProtocolChanged, txlog.ErrMetadataChanged, txlog.ErrConcurrentAppend,
	txlog.ErrConcurrentDeleteRead, txlog.ErrConcurrentDeleteDelete, txlog.ErrConcurrentTransaction}

// kindsOf returns the conflict kinds err matches, in conflictKinds order.
func kindsOf(err error) []error {
	var out []error
	for _, k := range conflictKinds {
		if errors.Is(err, k) {
			out = append(out, k)
		}
	}
	return out
}

// assertNoOrphans fails when the store holds a data or deletion-vector
// file that no commit of the log ever referenced: what a losing operation
// wrote must be deleted again.
func assertNoOrphans(t *testing.T, store objectstore.Store) {
	t.Helper()
	ctx := context.Background()
	referenced := map[string]bool{}
	for cm, err := range txlog.Commits(ctx, store, 0, -1) {
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range cm.Actions {
			if a.Add == nil {
				continue
			}
			referenced[txlog.DecodePath(a.Add.Path)] = true
			if dv := a.Add.DeletionVector; dv != nil && dv.StorageType == "u" {
				p, err := dv.AbsolutePath()
				if err != nil {
					t.Fatal(err)
				}
				referenced[p] = true
			}
		}
	}
	for _, k := range maintKeys(t, store) {
		if !strings.HasPrefix(k, txlog.LogPrefix) && !referenced[k] {
			t.Errorf("orphan %s: no commit references it", k)
		}
	}
}

func TestDMLConflicts(t *testing.T) {
	input := maintRowsFor(0, 40, "ams", "ber", "cph")
	appended := maintRowsFor(1000, 12, "ams", "ber", "cph")
	isAms := func(r value.Row) bool { return r[1] == "ams" }
	idLt := func(n int64) func(value.Row) bool { return func(r value.Row) bool { return r[0].(int64) < n } }
	idGe := func(n int64) func(value.Row) bool { return func(r value.Row) bool { return r[0].(int64) >= n } }
	and := func(a, b func(value.Row) bool) func(value.Row) bool {
		return func(r value.Row) bool { return a(r) && b(r) }
	}
	cityIs := func(c string) func(value.Row) bool { return func(r value.Row) bool { return r[1] == c } }
	// restoreSetup: version 1 holds input, version 2 deleted ids < 10.
	restoreSetup := func(ctx context.Context, tbl *Table) (*Table, error) {
		nt, _, err := tbl.Delete(ctx, Col("id").Lt(10))
		return nt, err
	}
	restoreRef := opDelete(nil, idLt(10)).apply(input)

	cases := []struct {
		name        string
		partitioned bool
		// setup runs after input is appended (version 1); the shared
		// snapshot is its result. ref is then the reference rows.
		setup func(ctx context.Context, tbl *Table) (*Table, error)
		ref   []value.Row
		first dmlOp
		// second runs from the shared snapshot after first committed.
		second dmlOp
		// wantKinds are conflict kinds second must fail with (all of
		// them), notKinds kinds it must not report; no wantKinds: second
		// succeeds on top of first.
		wantKinds, notKinds []error
	}{
		{name: "blind append, then DELETE by data predicate: delete retries, appended rows survive",
			first: opAppend(appended), second: opDelete(Col("city").Eq("ams"), isAms)},
		{name: "DELETE by data predicate, then blind append from the same snapshot",
			first: opDelete(Col("city").Eq("ams"), isAms), second: opAppend(appended)},
		{name: "blind append into the partition a DELETE reads: delete retries", partitioned: true,
			first: opAppend(appended), second: opDelete(And(Col("city").Eq("ams"), Col("id").Ge(20)), and(isAms, idGe(20)))},
		{name: "UPDATE moving rows into the partition a DELETE read", partitioned: true,
			first: opMoveCity("ber", "ams"), second: opDelete(And(Col("city").Eq("ams"), Col("id").Lt(20)), and(isAms, idLt(20))),
			wantKinds: []error{txlog.ErrConcurrentAppend}, notKinds: []error{txlog.ErrConcurrentDeleteRead, txlog.ErrConcurrentDeleteDelete}},
		{name: "overwrite replaceWhere of the partition a DELETE read", partitioned: true,
			first: opReplaceCity("ams", maintRowsFor(2000, 5, "ams")), second: opDelete(And(Col("city").Eq("ams"), Col("id").Lt(20)), and(isAms, idLt(20))),
			wantKinds: []error{txlog.ErrConcurrentAppend, txlog.ErrConcurrentDeleteRead}},
		{name: "overwrite replaceWhere of another partition than a DELETE read", partitioned: true,
			first: opReplaceCity("ber", maintRowsFor(2000, 5, "ber")), second: opDelete(And(Col("city").Eq("ams"), Col("id").Lt(20)), and(isAms, idLt(20)))},
		{name: "two DELETEs of the same file",
			first: opDelete(Col("id").Lt(10), idLt(10)), second: opDelete(Col("id").Ge(30), idGe(30)),
			wantKinds: []error{txlog.ErrConcurrentDeleteRead, txlog.ErrConcurrentDeleteDelete}},
		{name: "two DELETEs of the same partition file", partitioned: true,
			first:     opDelete(And(Col("city").Eq("ams"), Col("id").Lt(10)), and(isAms, idLt(10))),
			second:    opDelete(And(Col("city").Eq("ams"), Col("id").Ge(30)), and(isAms, idGe(30))),
			wantKinds: []error{txlog.ErrConcurrentDeleteRead, txlog.ErrConcurrentDeleteDelete}},
		{name: "DELETE in partition A and DELETE in partition B", partitioned: true,
			first:  opDelete(And(Col("city").Eq("ams"), Col("id").Ge(20)), and(isAms, idGe(20))),
			second: opDelete(And(Col("city").Eq("ber"), Col("id").Lt(20)), and(cityIs("ber"), idLt(20)))},
		{name: "whole-partition DELETEs of A and B", partitioned: true,
			first: opDelete(Col("city").Eq("ams"), isAms), second: opDelete(Col("city").Eq("cph"), cityIs("cph"))},
		{name: "UPDATE, then DELETE of the same file",
			first: opUpdateV(Col("id").Lt(5), idLt(5), -1), second: opDelete(Col("id").Ge(35), idGe(35)),
			wantKinds: []error{txlog.ErrConcurrentDeleteRead, txlog.ErrConcurrentDeleteDelete}},
		{name: "DELETE, then UPDATE of the same file",
			first: opDelete(Col("id").Ge(35), idGe(35)), second: opUpdateV(Col("id").Lt(5), idLt(5), -1),
			wantKinds: []error{txlog.ErrConcurrentDeleteRead, txlog.ErrConcurrentDeleteDelete}},
		{name: "blind append, then RESTORE", setup: restoreSetup, ref: restoreRef,
			first: opAppend(appended), second: opRestore(1, input),
			wantKinds: []error{txlog.ErrConcurrentAppend}},
		{name: "RESTORE, then blind append from the same snapshot", setup: restoreSetup, ref: restoreRef,
			first: opRestore(1, input), second: opAppend(appended)},
		{name: "metadata change, then DELETE",
			first: opSetProperty("delta.logRetentionDuration", "interval 60 days"), second: opDelete(Col("id").Lt(10), idLt(10)),
			wantKinds: []error{txlog.ErrMetadataChanged}},
		{name: "metadata change, then UPDATE", partitioned: true,
			first: opSetProperty("delta.logRetentionDuration", "interval 60 days"), second: opUpdateV(Col("city").Eq("ber"), cityIs("ber"), 7),
			wantKinds: []error{txlog.ErrMetadataChanged}},
	}
	dmlBackends(t, func(t *testing.T, newStore func(t *testing.T) objectstore.Store) {
		for _, c := range cases {
			for _, dv := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/dv=%v", c.name, dv), func(t *testing.T) {
					ctx := context.Background()
					store := newStore(t)
					tbl := conflictTable(t, store, c.partitioned, dv)
					tbl = maintAppend(t, tbl, input)
					ref := input
					if c.setup != nil {
						var err error
						if tbl, err = c.setup(ctx, tbl); err != nil {
							t.Fatal(err)
						}
						ref = c.ref
					}
					shared := tbl.Version()
					if err := c.first.run(ctx, tbl); err != nil {
						t.Fatalf("first (%s): %v", c.first.name, err)
					}
					ref = c.first.apply(ref)
					err := c.second.run(ctx, tbl)
					if len(c.wantKinds) == 0 {
						if err != nil {
							t.Fatalf("second (%s) after first (%s): %v", c.second.name, c.first.name, err)
						}
						ref = c.second.apply(ref)
					} else {
						var ce *txlog.ConflictError
						if !errors.As(err, &ce) || !errors.Is(err, txlog.ErrConcurrentModification) {
							t.Fatalf("second (%s) after first (%s): err = %v, want a *txlog.ConflictError", c.second.name, c.first.name, err)
						}
						got := kindsOf(err)
						for _, k := range c.wantKinds {
							if !slices.Contains(got, k) {
								t.Errorf("conflict kinds %v, want %v among them (%v)", got, k, err)
							}
						}
						for _, k := range c.notKinds {
							if slices.Contains(got, k) {
								t.Errorf("conflict kinds %v, must not hold %v (%v)", got, k, err)
							}
						}
						if ce.ReadVersion != shared || ce.WinnerVersion != shared+1 {
							t.Errorf("conflict read version %d, winner %d; want %d, %d", ce.ReadVersion, ce.WinnerVersion, shared, shared+1)
						}
					}
					re, err := Open(ctx, "", WithStore(store))
					if err != nil {
						t.Fatal(err)
					}
					wantVersion := shared + 1
					if len(c.wantKinds) == 0 {
						wantVersion++
					}
					if re.Version() != wantVersion {
						t.Errorf("table at version %d, want %d", re.Version(), wantVersion)
					}
					if got, want := maintScan(t, re), sortedRows(ref); !slices.Equal(got, want) {
						t.Errorf("rows:\n got %v\nwant %v", got, want)
					}
					assertNoOrphans(t, store)
					maintAssertLive(t, re)
				})
			}
		}
	})
}

// dmlRetry runs op until it commits or fails with something other than a
// conflict, refreshing the table before each attempt (what an application
// does on a ConcurrentModificationException).
func dmlRetry(ctx context.Context, tbl *Table, op func(*Table) (*Table, *DMLResult, error)) (*Table, *DMLResult, int, error) {
	for attempt := 1; ; attempt++ {
		latest, err := tbl.Refresh(ctx)
		if err != nil {
			return nil, nil, attempt, err
		}
		nt, res, err := op(latest)
		if err == nil || !errors.Is(err, txlog.ErrConcurrentModification) || attempt == 50 {
			return nt, res, attempt, err
		}
	}
}

// TestDMLConcurrentGoroutines races appenders against deleters on one
// table: appendersN goroutines append batches of new rows while two
// goroutines each delete, one row at a time, a set of rows that live in
// the same files (their DELETEs conflict with each other and are retried;
// the blind appends never conflict with them). The final rows must be the
// pre-filled rows minus every deleted one plus every appended row, on the
// memory store and on MinIO, with and without deletion vectors.
func TestDMLConcurrentGoroutines(t *testing.T) {
	const (
		appendersN = 4
		batches    = 4
		batchRows  = 5
		deletes    = 6 // per deleter
	)
	prefill := maintRowsFor(0, 60, "ams", "ber", "cph")
	dmlBackends(t, func(t *testing.T, newStore func(t *testing.T) objectstore.Store) {
		for _, dv := range []bool{true, false} {
			t.Run(fmt.Sprintf("dv=%v", dv), func(t *testing.T) {
				ctx := context.Background()
				store := newStore(t)
				tbl := conflictTable(t, store, false, dv)
				tbl = maintAppend(t, tbl, prefill)
				var (
					wg       sync.WaitGroup
					mu       sync.Mutex
					ref      = slices.Clone(prefill)
					errs     []error
					conflict int
				)
				fail := func(err error) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				for g := range appendersN {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for b := range batches {
							rows := maintRowsFor(10000+g*1000+b*batchRows, batchRows, "ams", "ber", "cph")
							if _, err := tbl.AppendRows(ctx, rows); err != nil {
								fail(fmt.Errorf("appender %d batch %d: %w", g, b, err))
								return
							}
							mu.Lock()
							ref = append(ref, rows...)
							mu.Unlock()
						}
					}()
				}
				doomed := func(r value.Row) bool {
					id := r[0].(int64)
					return id < 1000 && id%5 == 0 && id/5 < 2*deletes
				}
				for d := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						cur := tbl
						for i := range deletes {
							id := int64((2*i + d) * 5) // deleter 0: 0, 10, 20...; deleter 1: 5, 15, 25...
							nt, res, attempts, err := dmlRetry(ctx, cur, func(t *Table) (*Table, *DMLResult, error) {
								return t.Delete(ctx, Col("id").Eq(id))
							})
							if err != nil {
								fail(fmt.Errorf("deleter %d: delete id %d after %d attempts: %w", d, id, attempts, err))
								return
							}
							if !res.Committed || res.DeletedRows != 1 {
								fail(fmt.Errorf("deleter %d: delete id %d: committed %v, %d rows", d, id, res.Committed, res.DeletedRows))
								return
							}
							mu.Lock()
							conflict += attempts - 1
							mu.Unlock()
							cur = nt
						}
					}()
				}
				wg.Wait()
				if len(errs) > 0 {
					t.Fatal(errors.Join(errs...))
				}
				want := sortedRows(slices.DeleteFunc(ref, doomed))
				re, err := Open(ctx, "", WithStore(store))
				if err != nil {
					t.Fatal(err)
				}
				if got := maintScan(t, re); !slices.Equal(got, want) {
					t.Fatalf("rows (%d, want %d):\n got %v\nwant %v", len(got), len(want), got, want)
				}
				if wantV := int64(1 + appendersN*batches + 2*deletes); re.Version() != wantV {
					t.Errorf("version %d, want %d (one commit per append and delete)", re.Version(), wantV)
				}
				assertNoOrphans(t, store)
				maintAssertLive(t, re)
				rep, err := Verify(ctx, store)
				if err != nil || !rep.OK() {
					t.Fatalf("verify: %v %v", err, rep.Problems)
				}
				t.Logf("%d DELETE attempts retried after a conflict", conflict)
			})
		}
	})
}
