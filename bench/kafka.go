package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/streamsink/kafkasink"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// kafkaLinePrefix starts every line a Kafka child writes for the parent.
const kafkaLinePrefix = "deltabench-kafka: "

// kafkaQuery is the query id the ingest members of P9 share.
const kafkaQuery = "deltabench-p9"

// kafkaHeartbeat is the group heartbeat of both sides of P9: members learn
// of a rebalance (a member joining) within it.
const kafkaHeartbeat = 250 * time.Millisecond

// kafkaPollRecords bounds one poll of both sides: kafkasink's default batch.
const kafkaPollRecords = kafkasink.DefaultMaxBatchRecords

// KafkaJob is what one child process of P9 does, as JSON on its command
// line (KafkaChild).
type KafkaJob struct {
	// Mode is "ingest" (a kafkasink consumer-group member writing the
	// table) or "consume" (the floor: a kgo consumer-group member reading
	// read_committed and writing nothing).
	Mode    string   `json:"mode"`
	Brokers []string `json:"brokers"`
	Topic   string   `json:"topic"`
	Group   string   `json:"group"`
	Member  string   `json:"member"`
	// Table is the local directory of the table (ingest).
	Table string `json:"table,omitempty"`
}

// kafkaSchema is the table of P9's records (kafkaRecord).
func kafkaSchema() *schema.StructType {
	return schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("user", schema.Primitive(schema.String), true),
		schema.NewField("event", schema.Primitive(schema.String), true),
		schema.NewField("amount", schema.Primitive(schema.Double), true),
		schema.NewField("country", schema.Primitive(schema.String), true),
		schema.NewField("payload", schema.Primitive(schema.String), true),
	)
}

var kafkaEvents = [...]string{"view", "click", "add_to_cart", "purchase", "search", "login"}

var kafkaCountries = [...]string{"US", "DE", "FR", "GB", "BR", "IN", "JP", "NL", "ES", "CA"}

// kafkaPayloadBytes is the random text records take their payloads from:
// more than a batch of records (10,000 × 1 KiB) apart before a payload
// repeats, so that neither Kafka's nor Parquet's compression finds records
// repeated.
const kafkaPayloadBytes = 16 << 20

// kafkaPayloads returns kafkaPayloadBytes of random letters and digits.
func kafkaPayloads() []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	r := rand.New(rand.NewPCG(9, 9))
	b := make([]byte, kafkaPayloadBytes)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}

// kafkaRecord returns the JSON value of record id, exactly size bytes
// (size must leave room for the fields, about 150 bytes; at most 64 KiB).
func kafkaRecord(id int64, size int, payloads []byte) []byte {
	head := fmt.Sprintf(`{"id":%d,"user":"user-%06d","event":%q,"amount":%d.%02d,"country":%q,"payload":"`,
		id, id*7919%1_000_000, kafkaEvents[id%int64(len(kafkaEvents))], id%997, id%100, kafkaCountries[id*31%int64(len(kafkaCountries))])
	pad := max(0, size-len(head)-2)
	at := int(id*int64(size+7)) % (len(payloads) - pad)
	b := make([]byte, 0, size)
	b = append(b, head...)
	b = append(b, payloads[at:at+pad]...)
	return append(b, `"}`...)
}

// KafkaChild is the body of a P9 child process: it runs job (a KafkaJob as
// JSON) until ctx ends, writing lines "deltabench-kafka: ..." to w: "first
// <unix ns>" when it reads its first batch from the broker, "batch <records>
// <version> <unix ns>" after each committed epoch (ingest) or "poll <records>
// <unix ns>" after each poll (consume). Run it in a process of its own, so
// that N members are N processes as in production; the parent ends it with
// SIGINT.
func KafkaChild(ctx context.Context, job string, w io.Writer) error {
	var j KafkaJob
	if err := json.Unmarshal([]byte(job), &j); err != nil {
		return fmt.Errorf("bench: kafka child job %q: %w", job, err)
	}
	var mu sync.Mutex
	emit := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, kafkaLinePrefix+format+"\n", args...)
	}
	var first atomic.Bool
	hook := firstFetchHook(func() {
		if !first.Swap(true) {
			emit("first %d", time.Now().UnixNano())
		}
	})
	opts := []kgo.Opt{kgo.WithHooks(hook), kgo.HeartbeatInterval(kafkaHeartbeat), kgo.ClientID("deltabench-" + j.Member)}
	var err error
	switch j.Mode {
	case "ingest":
		err = kafkaIngest(ctx, j, opts, emit)
	case "consume":
		err = kafkaConsume(ctx, j, opts, emit)
	default:
		err = fmt.Errorf("bench: kafka child: unknown mode %q", j.Mode)
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// firstFetchHook calls its function on every batch read from the broker.
type firstFetchHook func()

func (h firstFetchHook) OnFetchBatchRead(kgo.BrokerMetadata, string, int32, kgo.FetchBatchMetrics) {
	h()
}

func kafkaIngest(ctx context.Context, j KafkaJob, opts []kgo.Opt, emit func(string, ...any)) error {
	store, err := objectstore.NewLocal(j.Table)
	if err != nil {
		return err
	}
	quiet := slog.New(slog.DiscardHandler)
	retries := slog.New(retryCounter(func() { emit("retry %d", time.Now().UnixNano()) }))
	tbl, err := table.Open(ctx, "", table.WithStore(store), table.WithLogger(quiet), table.WithTxnOptions(txlog.WithLogger(retries)))
	if err != nil {
		return err
	}
	sink, err := streamsink.New(tbl, kafkasink.MemberQueryID(kafkaQuery, j.Member), streamsink.WithLogger(quiet))
	if err != nil {
		return err
	}
	in, err := kafkasink.New(sink, j.Brokers, []string{j.Topic}, kafkasink.WithConsumerGroup(j.Group, kafkaQuery),
		kafkasink.WithLogger(quiet), kafkasink.WithClientOptions(opts...),
		kafkasink.WithBatchHook(func(b kafkasink.Batch) {
			emit("batch %d %d %d", b.Records-b.Dropped, b.Version, time.Now().UnixNano())
		}))
	if err != nil {
		return err
	}
	_, err = in.Run(ctx)
	return err
}

// retryCounter is a slog handler that calls its function for each log
// record of txlog reading back a version a concurrent commit took ("version
// taken by a concurrent commit, retrying at the next version": one per
// winner walked over before a free version) and drops everything else.
type retryCounter func()

func (retryCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h retryCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "concurrent commit") {
		h()
	}
	return nil
}

func (h retryCounter) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h retryCounter) WithGroup(string) slog.Handler { return h }

// kafkaConsume is the floor: a consumer-group member with the client
// options kafkasink uses (cooperative-sticky, read_committed, no offset
// commits, rebalances blocked during a poll's processing), counting records.
func kafkaConsume(ctx context.Context, j KafkaJob, opts []kgo.Opt, emit func(string, ...any)) error {
	cl, err := kgo.NewClient(append(opts,
		kgo.SeedBrokers(j.Brokers...),
		kgo.ConsumerGroup(j.Group),
		kgo.ConsumeTopics(j.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)...)
	if err != nil {
		return err
	}
	defer func() {
		cl.AllowRebalance() // else leaving the group on Close waits for it
		cl.Close()
	}()
	for {
		fs := cl.PollRecords(ctx, kafkaPollRecords)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ferr error
		fs.EachError(func(topic string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("bench: fetching %s/%d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		n, bytes := 0, 0
		fs.EachRecord(func(r *kgo.Record) { n++; bytes += len(r.Value) })
		if n > 0 {
			emit("poll %d %d", n, time.Now().UnixNano())
		}
		cl.AllowRebalance()
	}
}

// kafkaProc is a running child of P9, with what it reported.
type kafkaProc struct {
	name    string
	cmd     *exec.Cmd
	stderr  strings.Builder
	started time.Time
	done    chan struct{} // closed when stdout is drained
	mu      sync.Mutex
	first   time.Time
	records int64
	last    time.Time // time of the last batch or poll
	batches int
	retries int   // commits retried after a conflict (ingest)
	err     error // a bad line
}

func (p *kafkaProc) snapshot() (first, last time.Time, records int64, batches int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first, p.last, p.records, p.batches
}

func startKafkaChild(ctx context.Context, env *Env, name string, job KafkaJob) (*kafkaProc, error) {
	spec, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	p := &kafkaProc{name: name, cmd: env.KafkaChild(ctx, string(spec)), done: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), kafkaLinePrefix)
			if !ok {
				continue // go test's own output in a test binary
			}
			f := strings.Fields(line)
			num := func(i int) int64 {
				if i >= len(f) {
					return -1
				}
				n, err := strconv.ParseInt(f[i], 10, 64)
				if err != nil {
					return -1
				}
				return n
			}
			p.mu.Lock()
			switch {
			case len(f) == 2 && f[0] == "retry":
				p.retries++
			case len(f) == 2 && f[0] == "first":
				p.first = time.Unix(0, num(1))
			case len(f) == 4 && f[0] == "batch", len(f) == 3 && f[0] == "poll":
				p.records += num(1)
				p.last = time.Unix(0, num(len(f)-1))
				p.batches++
			default:
				p.err = fmt.Errorf("bench: %s wrote %q", name, sc.Text())
			}
			p.mu.Unlock()
		}
	}()
	return p, nil
}

// stop ends the child with SIGINT (SIGKILL after 30 s) and returns its
// error, if it failed.
func (p *kafkaProc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	timer := time.AfterFunc(30*time.Second, func() { _ = p.cmd.Process.Kill() })
	defer timer.Stop()
	<-p.done
	err := p.cmd.Wait()
	if p.err != nil {
		return p.err
	}
	if err != nil {
		return fmt.Errorf("bench: %s: %v; stderr:\n%s", p.name, err, p.stderr.String())
	}
	return nil
}

// alive returns an error if the child exited before it was stopped.
func (p *kafkaProc) alive() error {
	select {
	case <-p.done:
		_ = p.cmd.Wait()
		return fmt.Errorf("bench: %s exited early: %v; stderr:\n%s", p.name, p.cmd.ProcessState, p.stderr.String())
	default:
		return nil
	}
}

func stopAll(procs []*kafkaProc) error {
	var errs []error
	for _, p := range procs {
		if err := p.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// kafkaRun is what one side (floor or ingest) measured with n members.
type kafkaRun struct {
	records  int64
	elapsed  time.Duration // first batch read by any member .. all records consumed or committed
	startup  time.Duration // children started .. first batch read
	skew     time.Duration // first member's first batch .. last member's first batch
	perProc  []int64       // records each member consumed or committed
	batches  int
	retries  int   // versions taken by concurrent commits read back, whole run (ingest)
	versions int64 // table versions committed (ingest)
}

func (r kafkaRun) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.records) / r.elapsed.Seconds()
}

// summarize computes a run from its children once all records are in.
func summarize(procs []*kafkaProc, end time.Time) kafkaRun {
	var r kafkaRun
	var first, lastFirst time.Time
	started := procs[0].started
	for _, p := range procs {
		f, _, n, b := p.snapshot()
		r.records += n
		r.batches += b
		r.perProc = append(r.perProc, n)
		p.mu.Lock()
		r.retries += p.retries
		p.mu.Unlock()
		if !f.IsZero() && (first.IsZero() || f.Before(first)) {
			first = f
		}
		if f.After(lastFirst) {
			lastFirst = f
		}
	}
	if !first.IsZero() {
		r.elapsed, r.startup, r.skew = end.Sub(first), first.Sub(started), lastFirst.Sub(first)
	}
	return r
}

// kafkaTimeout bounds each phase of P9.
func kafkaTimeout(records int) time.Duration {
	return 2*time.Minute + time.Duration(records)*time.Millisecond
}

// kafkaFloor runs n floor consumers in a new group until they have read
// want records.
func kafkaFloor(ctx context.Context, env *Env, topic string, n int, want int64) (kafkaRun, error) {
	group := fmt.Sprintf("%s-floor-%dm", topic, n)
	var procs []*kafkaProc
	for i := range n {
		p, err := startKafkaChild(ctx, env, fmt.Sprintf("floor consumer %d of %d", i+1, n),
			KafkaJob{Mode: "consume", Brokers: env.Kafka.Brokers(), Topic: topic, Group: group, Member: fmt.Sprintf("f%d", i+1)})
		if err != nil {
			return kafkaRun{}, errors.Join(err, stopAll(procs))
		}
		procs = append(procs, p)
	}
	deadline := time.Now().Add(kafkaTimeout(int(want)))
	for {
		var got int64
		var last time.Time
		for _, p := range procs {
			_, l, r, _ := p.snapshot()
			got += r
			if l.After(last) {
				last = l
			}
		}
		if got >= want {
			run := summarize(procs, last)
			return run, stopAll(procs)
		}
		for _, p := range procs {
			if err := p.alive(); err != nil {
				return kafkaRun{}, errors.Join(err, stopAll(procs))
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return kafkaRun{}, errors.Join(fmt.Errorf("bench: %d floor consumers read %d of %d records", n, got, want), ctx.Err(), stopAll(procs))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kafkaPoller follows a table's latest version on the local filesystem and
// remembers when each version became visible with its partitions' offsets.
type kafkaPoller struct {
	store objectstore.Store
	snap  *txlog.Snapshot
	parts []kafkasink.TopicPartition
	seen  []versionSeen
}

type versionSeen struct {
	at      time.Time
	version int64
	offsets map[kafkasink.TopicPartition]int64
}

// poll refreshes the snapshot and records a new version.
func (kp *kafkaPoller) poll(ctx context.Context) error {
	var err error
	if kp.snap == nil {
		kp.snap, err = txlog.Load(ctx, kp.store)
	} else {
		kp.snap, err = kp.snap.Update(ctx)
	}
	if err != nil {
		return err
	}
	if n := len(kp.seen); n > 0 && kp.seen[n-1].version == kp.snap.Version() {
		return nil
	}
	offs, err := kafkasink.Offsets(kp.snap, kafkaQuery, kp.parts)
	if err != nil {
		return err
	}
	kp.seen = append(kp.seen, versionSeen{at: time.Now(), version: kp.snap.Version(), offsets: offs})
	return nil
}

// reached reports whether the latest version holds every offset below ends.
func (kp *kafkaPoller) reached(ends map[int32]int64) bool {
	if len(kp.seen) == 0 {
		return false
	}
	last := kp.seen[len(kp.seen)-1]
	for p, e := range ends {
		if last.offsets[kafkasink.TopicPartition{Topic: kp.parts[0].Topic, Partition: p}] < e {
			return false
		}
	}
	return true
}

// committedAt returns when the record at offset of partition p first
// became visible in the table, or false.
func (kp *kafkaPoller) committedAt(p int32, offset int64) (time.Time, bool) {
	tp := kafkasink.TopicPartition{Topic: kp.parts[0].Topic, Partition: p}
	i, _ := slices.BinarySearchFunc(kp.seen, offset, func(v versionSeen, off int64) int {
		if v.offsets[tp] > off {
			return 1
		}
		return -1
	})
	if i == len(kp.seen) {
		return time.Time{}, false
	}
	return kp.seen[i].at, true
}

// producedRec is one record of the latency phase: where it landed, when it
// was produced.
type producedRec struct {
	partition int32
	offset    int64
	at        time.Time
}

// kafkaProducer produces P9's records round-robin over the partitions.
type kafkaProducer struct {
	cl       *kgo.Client
	topic    string
	parts    int32
	size     int
	payloads []byte
	next     int64           // next record id: the records produced so far
	ends     map[int32]int64 // next offset after the records produced, per partition
}

// produce produces n records and waits for them, returning their
// positions; with rate > 0 it spreads them at rate records/s.
func (kp *kafkaProducer) produce(ctx context.Context, n int, rate float64) ([]producedRec, error) {
	var mu sync.Mutex
	var firstErr error
	out := make([]producedRec, 0, n)
	start := time.Now()
	for i := range n {
		if rate > 0 {
			if d := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); d > 0 {
				time.Sleep(d)
			}
		}
		id := kp.next
		kp.next++
		rec := &kgo.Record{Topic: kp.topic, Partition: int32(id % int64(kp.parts)), Value: kafkaRecord(id, kp.size, kp.payloads), Timestamp: time.Now()}
		kp.cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out = append(out, producedRec{partition: r.Partition, offset: r.Offset, at: r.Timestamp})
		})
	}
	if err := kp.cl.Flush(ctx); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return nil, fmt.Errorf("bench: producing to %s: %w", kp.topic, firstErr)
	}
	if kp.ends == nil {
		kp.ends = map[int32]int64{}
	}
	for _, r := range out {
		kp.ends[r.partition] = max(kp.ends[r.partition], r.offset+1)
	}
	return out, nil
}

// kafkaIngestRun is the ingest side with n members: the throughput of the
// pre-produced records, then the latency of records produced at a steady
// rate while the members run.
type kafkaIngestRun struct {
	kafkaRun
	latencies []time.Duration
	rows      int64
}

func kafkaIngestSide(ctx context.Context, env *Env, cfg Config, prod *kafkaProducer, n int) (kafkaIngestRun, error) {
	var res kafkaIngestRun
	dir, store, err := env.tempLocalStore(fmt.Sprintf("p9-table-%dm-", n))
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	if _, err := table.Create(ctx, "", kafkaSchema(), table.WithStore(store)); err != nil {
		return res, err
	}
	kp := &kafkaPoller{store: store}
	for p := range prod.parts {
		kp.parts = append(kp.parts, kafkasink.TopicPartition{Topic: prod.topic, Partition: p})
	}
	group := fmt.Sprintf("%s-ingest-%dm", prod.topic, n)
	var procs []*kafkaProc
	for i := range n {
		p, err := startKafkaChild(ctx, env, fmt.Sprintf("ingest member %d of %d", i+1, n),
			KafkaJob{Mode: "ingest", Brokers: env.Kafka.Brokers(), Topic: prod.topic, Group: group, Member: fmt.Sprintf("m%d", i+1), Table: dir})
		if err != nil {
			return res, errors.Join(err, stopAll(procs))
		}
		procs = append(procs, p)
	}
	fail := func(err error) (kafkaIngestRun, error) { return res, errors.Join(err, stopAll(procs)) }
	wait := func(what string, target func() map[int32]int64) error {
		return kp.waitCommitted(ctx, procs, kafkaTimeout(cfg.KafkaRecords), what, target)
	}
	before, beforeEnds := prod.next, maps.Clone(prod.ends)
	if err := wait("the records produced before", func() map[int32]int64 { return beforeEnds }); err != nil {
		return fail(err)
	}
	end := kp.seen[len(kp.seen)-1].at
	// The members report a batch just after its commit is visible.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if res.kafkaRun = summarize(procs, end); res.records >= before || time.Now().After(deadline) {
			break
		}
	}
	if res.records != before {
		return fail(fmt.Errorf("bench: %d ingest members reported %d records committed, want %d", n, res.records, before))
	}
	res.versions = kp.snap.Version()
	// Latency: records produced at a steady rate to members that are
	// caught up and stable in their group, while the table is polled.
	type produced struct {
		recs []producedRec
		ends map[int32]int64
		err  error
	}
	done := make(chan produced, 1)
	go func() {
		recs, err := prod.produce(ctx, cfg.KafkaLatencyRecords, float64(cfg.KafkaLatencyRate))
		done <- produced{recs, maps.Clone(prod.ends), err}
	}()
	var lat *produced
	target := func() map[int32]int64 {
		if lat == nil {
			select {
			case r := <-done:
				lat = &r
			default:
				return nil
			}
		}
		if lat.err != nil {
			return map[int32]int64{} // reached: the error is returned below
		}
		return lat.ends
	}
	werr := wait("the latency phase's records", target)
	if lat == nil {
		<-done // the producer stops with ctx
	}
	if werr != nil {
		return fail(werr)
	}
	if lat.err != nil {
		return fail(lat.err)
	}
	recs := lat.recs
	for _, r := range recs {
		at, ok := kp.committedAt(r.partition, r.offset)
		if !ok {
			return fail(fmt.Errorf("bench: record %d/%d not in the table", r.partition, r.offset))
		}
		res.latencies = append(res.latencies, at.Sub(r.at))
	}
	if err := stopAll(procs); err != nil {
		return res, err
	}
	res.retries = summarize(procs, end).retries
	res.rows, err = checkExactlyOnce(ctx, store, n, prod.next)
	return res, err
}

// waitCommitted polls the table until it holds the offsets target returns
// (nil: not known yet, keep polling), failing when a member process dies,
// timeout passes or ctx ends; what names the records in the error.
func (kp *kafkaPoller) waitCommitted(ctx context.Context, procs []*kafkaProc, timeout time.Duration, what string, target func() map[int32]int64) error {
	deadline := time.Now().Add(timeout)
	for {
		if want := target(); want != nil && kp.reached(want) {
			return nil
		}
		for _, p := range procs {
			if err := p.alive(); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.Join(fmt.Errorf("bench: %d ingest members: %s not committed after %v (table version %d)",
				len(procs), what, timeout, kp.snap.Version()), ctx.Err())
		}
		time.Sleep(5 * time.Millisecond)
		if err := kp.poll(ctx); err != nil {
			return err
		}
	}
}

// checkExactlyOnce checks the table in store after n ingest members
// consumed want records: it holds every record once (its files' rows add up
// to want), and the log's epochs and offsets are clean (VerifyExactlyOnce).
// It returns the table's rows.
func checkExactlyOnce(ctx context.Context, store objectstore.Store, n int, want int64) (int64, error) {
	snap, err := txlog.Load(ctx, store)
	if err != nil {
		return 0, err
	}
	var rows int64
	for a := range snap.AllFiles() {
		nr, _ := a.NumRecords()
		rows += nr
	}
	if rows != want {
		return rows, fmt.Errorf("bench: %d ingest members: table holds %d rows, want %d (each record once)", n, rows, want)
	}
	rep, err := table.VerifyExactlyOnce(ctx, store)
	if err != nil {
		return rows, err
	}
	if !rep.OK() {
		return rows, fmt.Errorf("bench: %d ingest members: verify --exactly-once is not clean: %+v", n, rep)
	}
	return rows, nil
}

// KafkaFigure measures P9: Kafka → Delta records/s of Config.KafkaRecords
// JSON records of Config.KafkaRecordBytes on a topic of
// Config.KafkaPartitions partitions, with each member count of
// Config.KafkaMembers (separate processes in one consumer group, a local
// filesystem table), against the floor of as many kgo consumers reading the
// same records read_committed without writing; then the end-to-end latency
// from produce (the producer's timestamp) to the table version holding the
// record becoming visible.
func KafkaFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P9", Title: "Kafka → Delta ingest",
		Setup: fmt.Sprintf("real Kafka broker (single node, KRaft) on localhost; %d JSON records of %d B on %d partitions, produced before each run; "+
			"%v ingest members (processes, one consumer group, kafkasink defaults: batches of up to %d records, local filesystem table) "+
			"vs as many kgo consumers (processes, same group options, read_committed, nothing written); rate = records / (first batch read .. last committed); "+
			"then %d records produced at %d records/s to the running members: latency from the producer's timestamp to the version holding the record "+
			"being visible to a reader polling the log every 5 ms",
			cfg.KafkaRecords, cfg.KafkaRecordBytes, cfg.KafkaPartitions, cfg.KafkaMembers, kafkaPollRecords, cfg.KafkaLatencyRecords, cfg.KafkaLatencyRate)}
	switch {
	case env.Kafka == nil:
		fig.Skipped = "no Kafka broker (scripts/install-kafka.sh)"
		return fig, nil
	case skipWithoutChild(fig, env.KafkaChild):
		return fig, nil
	}
	topic := uniquePrefix("p9")
	if err := env.Kafka.CreateTopic(ctx, topic, cfg.KafkaPartitions); err != nil {
		return fig, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Kafka.Brokers()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	if err != nil {
		return fig, err
	}
	defer cl.Close()
	prod := &kafkaProducer{cl: cl, topic: topic, parts: cfg.KafkaPartitions, size: cfg.KafkaRecordBytes, payloads: kafkaPayloads()}
	env.logf("P9: producing %d records", cfg.KafkaRecords)
	if _, err := prod.produce(ctx, cfg.KafkaRecords, 0); err != nil {
		return fig, err
	}
	for _, n := range cfg.KafkaMembers {
		// Both sides read every record on the topic: the pre-produced ones
		// and those of the previous member counts' latency phases.
		env.logf("P9: %d members: floor (%d records)", n, prod.next)
		floor, err := kafkaFloor(ctx, env, topic, n, prod.next)
		if err != nil {
			return fig, err
		}
		env.logf("P9: %d members: ingest", n)
		in, err := kafkaIngestSide(ctx, env, cfg, prod, n)
		if err != nil {
			return fig, err
		}
		s := fmt.Sprintf("_%dm", n)
		fig.add("records_per_s"+s, in.rate(), "records/s")
		fig.add("floor_records_per_s"+s, floor.rate(), "records/s")
		fig.add("ratio"+s, ratio(in.elapsed, floor.elapsed), "x")
		fig.add("mib_per_s"+s, in.rate()*float64(cfg.KafkaRecordBytes)/(1<<20), "MiB/s")
		fig.add("latency_p50"+s, ms(median(in.latencies)), "ms")
		fig.add("latency_p99"+s, ms(quantile(in.latencies, 0.99)), "ms")
		fig.add("latency_max"+s, ms(quantile(in.latencies, 1)), "ms")
		fig.add("commits"+s, float64(in.versions), "count")
		fig.add("winners_read"+s, float64(in.retries), "count")
		fig.add("startup"+s, ms(in.startup), "ms")
		fig.add("rows"+s, float64(in.rows), "count")
		fig.note("%d members, %d records: ingest %.0f records/s in %v (%d versions; per member %v records; first reads %v apart, %v after the start); "+
			"floor %.0f records/s in %v (per member %v; first reads %v apart)",
			n, in.records, in.rate(), in.elapsed.Round(time.Millisecond), in.versions, in.perProc, in.skew.Round(time.Millisecond), in.startup.Round(time.Millisecond),
			floor.rate(), floor.elapsed.Round(time.Millisecond), floor.perProc, floor.skew.Round(time.Millisecond))
	}
	return fig, nil
}
