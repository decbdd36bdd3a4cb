package testsupport

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

//go:embed spark_oracle.py
var sparkOracleScript string

// IvyEnv names the environment variable that overrides the Ivy cache holding
// the Delta jars (default ~/.cache/deltakit/ivy), which
// scripts/install-interop.sh fills.
const IvyEnv = "DELTAKIT_IVY"

// Time limits of the Spark oracle: starting the session (about 50 s on a
// loaded 2-core machine), one request, and what each request of a batch
// adds to it.
const (
	sparkStartTimeout     = 5 * time.Minute
	sparkRequestTimeout   = 5 * time.Minute
	sparkBatchItemTimeout = 30 * time.Second
)

// SparkOracle is one Apache Spark session with Delta Lake (pyspark and
// delta-spark from the interop venv) that answers read and SQL requests.
// Spark returns it; it is shared by every test of the package and safe for
// concurrent use (requests run one at a time).
type SparkOracle struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
	dead   error // set when the process stopped answering
	// Version is Spark's version string.
	Version string
}

// SparkColumn is one column of a SparkResult.
type SparkColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // Spark's simpleString: "bigint", "timestamp_ntz", "struct<a:int>"
	Nullable bool   `json:"nullable"`
}

// SparkResult is Spark's answer to a request. Rows are in schema order and
// sorted by their JSON text; values are encoded as spark_oracle.py
// describes (integers as json.Number, decimals as strings, dates as
// "YYYY-MM-DD", timestamps as "YYYY-MM-DDTHH:MM:SS.ffffff" in UTC, binary as
// base64, structs as objects, maps as [key, value] lists).
type SparkResult struct {
	Schema []SparkColumn `json:"schema"`
	Rows   [][]any       `json:"rows"`
	// Millis is how long Spark took to answer, in milliseconds.
	Millis int64 `json:"ms"`
}

// SparkError is a request Spark refused: Condition is its error class
// (e.g. "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"), "" when it has none.
type SparkError struct {
	Condition string
	Message   string
}

func (e *SparkError) Error() string {
	if e.Condition == "" {
		return "spark: " + e.Message
	}
	return "spark: [" + e.Condition + "] " + e.Message
}

var spark struct {
	once   sync.Once
	oracle *SparkOracle
	absent string // why Spark is unavailable (an Absent message)
	err    error  // Spark was there but did not start
}

// Spark returns the package's Spark oracle, starting it on first use (one
// JVM per test binary; it stops when the binary exits and closes its
// stdin, or at CloseSpark). When pyspark, delta-spark or the Delta jars are
// missing it ends t with Absent (a failure under CI=true, a skip
// otherwise); when Spark fails to start it fails t.
func Spark(t testing.TB) *SparkOracle {
	t.Helper()
	py := Python(t)
	spark.once.Do(func() { spark.oracle, spark.absent, spark.err = startSpark(py) })
	if spark.absent != "" {
		Absent(t, "%s", spark.absent)
	}
	if spark.err != nil {
		t.Fatal(spark.err)
	}
	return spark.oracle
}

// CloseSpark stops the package's Spark oracle if it was started; a TestMain
// may call it after m.Run. Without it, the oracle stops when the test binary
// exits.
func CloseSpark() {
	if spark.oracle != nil {
		spark.oracle.Close()
	}
}

func startSpark(py string) (*SparkOracle, string, error) {
	cmd := exec.Command(py, "-c", sparkOracleScript)
	cmd.Env = os.Environ()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	tail := &tailBuffer{max: 64 << 10}
	cmd.Stderr = tail
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("spark oracle: start %s: %w", py, err)
	}
	o := &SparkOracle{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20), stderr: tail}
	var ready struct {
		Ready  bool   `json:"ready"`
		Absent bool   `json:"absent"`
		Error  string `json:"error"`
		Spark  string `json:"spark"`
	}
	line, err := o.readLine(sparkStartTimeout)
	if err == nil {
		err = json.Unmarshal(line, &ready)
	}
	switch {
	case err != nil:
		o.Close()
		return nil, "", fmt.Errorf("spark oracle: no ready line: %v\nstderr:\n%s", err, tail.String())
	case ready.Absent:
		o.Close()
		return nil, ready.Error + " (run scripts/install-interop.sh)", nil
	case !ready.Ready:
		o.Close()
		return nil, "", fmt.Errorf("spark oracle: %s\nstderr:\n%s", ready.Error, tail.String())
	}
	o.Version = ready.Spark
	return o, "", nil
}

// readLine reads one answer line, failing after d.
func (o *SparkOracle) readLine(d time.Duration) ([]byte, error) {
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := o.out.ReadBytes('\n')
		ch <- res{b, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-time.After(d):
		o.kill()
		return nil, fmt.Errorf("no answer within %v", d)
	}
}

func (o *SparkOracle) kill() {
	if o.cmd.Process != nil {
		_ = o.cmd.Process.Kill()
	}
}

// Close stops the Spark session and waits for the process (at most a
// minute, then kills it).
func (o *SparkOracle) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead == nil {
		o.dead = errors.New("spark oracle closed")
	}
	_ = o.stdin.Close()
	done := make(chan struct{})
	go func() { _ = o.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		o.kill()
		<-done
	}
}

// Do sends one request (see spark_oracle.py) and returns Spark's result, a
// *SparkError when Spark refused the request, or another error when the
// oracle process failed (which ends the oracle for the rest of the run).
func (o *SparkOracle) Do(req map[string]any) (*SparkResult, error) {
	a, err := o.roundTrip(req, sparkRequestTimeout)
	if err != nil {
		return nil, err
	}
	return a.result()
}

// Batch sends reqs in one round trip (spark_oracle.py's "batch" op): Spark
// runs them in order, one after the other. results[i] and errs[i] answer
// reqs[i] (errs[i] a *SparkError when Spark refused that request; the
// others still run); err is a failure of the oracle process, as for Do.
func (o *SparkOracle) Batch(reqs []map[string]any) (results []*SparkResult, errs []error, err error) {
	// Each request of a batch gets its own share of time.
	d := sparkRequestTimeout + time.Duration(len(reqs))*sparkBatchItemTimeout
	a, err := o.roundTrip(map[string]any{"op": "batch", "requests": reqs}, d)
	if err == nil && !a.OK {
		err = &SparkError{Condition: a.Condition, Message: a.Error}
	}
	if err != nil {
		return nil, nil, err
	}
	if len(a.Results) != len(reqs) {
		return nil, nil, fmt.Errorf("spark oracle: batch of %d requests got %d answers", len(reqs), len(a.Results))
	}
	results, errs = make([]*SparkResult, len(reqs)), make([]error, len(reqs))
	for i, raw := range a.Results {
		ra, err := decodeAnswer(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("spark oracle: batch answer %d: %w", i, err)
		}
		results[i], errs[i] = ra.result()
	}
	return results, errs, nil
}

// ReadRequest is the request Read sends: the Delta table at path (a local
// directory), at version when it is not nil. For Batch.
func ReadRequest(path string, version *int64) map[string]any {
	req := map[string]any{"op": "read", "path": path}
	if version != nil {
		req["version"] = *version
	}
	return req
}

// SQLRequest is the request SQL sends. For Batch.
func SQLRequest(stmt string) map[string]any {
	return map[string]any{"op": "sql", "sql": stmt}
}

// sparkAnswer is one answer line of spark_oracle.py.
type sparkAnswer struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error"`
	Condition string `json:"condition"`
	SparkResult
	Results []json.RawMessage `json:"results"` // of a batch
}

func decodeAnswer(b []byte) (*sparkAnswer, error) {
	var a sparkAnswer
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("bad answer %q: %w", b, err)
	}
	return &a, nil
}

func (a *sparkAnswer) result() (*SparkResult, error) {
	if !a.OK {
		return nil, &SparkError{Condition: a.Condition, Message: a.Error}
	}
	return &a.SparkResult, nil
}

// roundTrip sends req and decodes the answer line, failing after d.
func (o *SparkOracle) roundTrip(req map[string]any, d time.Duration) (*sparkAnswer, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead != nil {
		return nil, o.dead
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := o.stdin.Write(append(b, '\n')); err != nil {
		o.dead = fmt.Errorf("spark oracle: write request: %w\nstderr:\n%s", err, o.stderr.String())
		return nil, o.dead
	}
	line, err := o.readLine(d)
	if err != nil {
		o.dead = fmt.Errorf("spark oracle: request %.2000s: %w\nstderr:\n%s", b, err, o.stderr.String())
		return nil, o.dead
	}
	a, err := decodeAnswer(line)
	if err != nil {
		o.dead = fmt.Errorf("spark oracle: %w", err)
		return nil, o.dead
	}
	return a, nil
}

// Read reads the Delta table at path (a local directory) with Spark, at
// version when it is not nil.
func (o *SparkOracle) Read(path string, version *int64) (*SparkResult, error) {
	return o.Do(ReadRequest(path, version))
}

// SQL runs one Spark SQL statement and returns its result.
func (o *SparkOracle) SQL(stmt string) (*SparkResult, error) {
	return o.Do(SQLRequest(stmt))
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
