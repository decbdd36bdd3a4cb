// Command deltabench measures deltakit against its floors (a bare
// conditional PUT, raw parquet-go) and against delta-rs, side by side in one
// run, and prints the figures as a table or as JSON:
//
//	go run ./cmd/deltabench [--quick] [--only P1,P3] [-o table|json]
//
// The figures (P1 commit, P2 append, P3 open, P4 contention, P5 memory, P6
// streaming, P7 delete, P8 Arrow, P9 Kafka ingest, P10 group commit, P11
// MERGE, P12 ingest, S1 file size, R1 upload RSS, R2 optimize RSS, G1 growth) are described in
// package bench and BENCHMARKS.md. A MinIO server
// (scripts/install-minio.sh) is started for P1, P2, P4, P6, P7 and P10, a
// Kafka broker (scripts/install-kafka.sh) for P9
// (skipped without the install; with CI=true that fails); the
// delta-rs side of P3 needs the venv of scripts/install-interop.sh
// ($DELTAKIT_VENV or <repo>/.venv) and is skipped without it, as is the
// delta-rs sides of P11 and P12. P12 ingests the demo's flights-3m.parquet
// ($DELTAKIT_FLIGHTS_PARQUET or ~/.cache/deltakit/demo, from
// scripts/fetch-demo-data.sh; skipped without it, failed with CI=true)
// with a deltactl it builds with go build; S1 writes the same file's rows
// and compares its bytes with pyarrow's (the venv's; the pyarrow side is
// skipped without it). --quick uses
// small sizes (5-30 s on 2 cores; CI runs it); the default sizes are
// those of the issue.
//
// Progress goes to stderr. The exit status is 1 when a figure failed to run
// (never because of a timing: no threshold is asserted), 2 for bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/deltakit/deltakit/bench"
	"github.com/deltakit/deltakit/testenv"
)

// memoryChildCmd is the hidden subcommand that runs P5's child process.
const memoryChildCmd = "__memory-child"

// arrowChildCmd is the hidden subcommand that runs P8's memory child.
const arrowChildCmd = "__arrow-child"

// kafkaChildCmd is the hidden subcommand that runs a P9 child process
// (an ingest member or a floor consumer) until SIGINT.
const kafkaChildCmd = "__kafka-child"

// contentionChildCmd is the hidden subcommand that runs a P4 writer
// process.
const contentionChildCmd = "__p4-child"

// rssChildCmd is the hidden subcommand that runs an R1/R2 child process.
const rssChildCmd = "__rss-child"

// childBody is the body of a hidden child subcommand: it runs with the
// subcommand's one argument and writes its figures to stdout.
type childBody struct {
	run func(ctx context.Context, arg string) error
	// untilInterrupt makes SIGINT cancel ctx (the child then ends cleanly)
	// instead of killing the process.
	untilInterrupt bool
}

// childBodies are the hidden subcommands, by name.
var childBodies = map[string]childBody{
	rssChildCmd:    {run: func(ctx context.Context, job string) error { return bench.RSSChild(ctx, job, os.Stdout) }},
	memoryChildCmd: {run: func(ctx context.Context, dir string) error { return bench.MemoryChild(ctx, dir, os.Stdout) }},
	contentionChildCmd: {run: func(ctx context.Context, job string) error {
		return bench.ContentionChild(ctx, job, os.Stdin, os.Stdout)
	}},
	arrowChildCmd: {run: func(ctx context.Context, dir string) error { return bench.ArrowScanChild(ctx, dir, os.Stdout) }},
	kafkaChildCmd: {run: func(ctx context.Context, job string) error { return bench.KafkaChild(ctx, job, os.Stdout) },
		untilInterrupt: true},
}

// runChild runs the child subcommand body with arg and exits: 0, or 1 with
// the error on stderr.
func runChild(body childBody, arg string) {
	ctx, stop := context.Background(), func() {}
	if body.untilInterrupt {
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
	}
	err := body.run(ctx, arg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "deltabench:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func main() {
	if len(os.Args) == 3 {
		if body, ok := childBodies[os.Args[1]]; ok {
			runChild(body, os.Args[2])
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("deltabench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small sizes (5-30 s on 2 cores), as CI runs")
	only := fs.String("only", "", "comma-separated figures to run, e.g. P1,P3 (default all)")
	format := fs.String("o", "table", "output format: table or json")
	tmp := fs.String("tmp", "", "directory for generated tables and MinIO data (default: a new temporary directory)")
	quiet := fs.Bool("q", false, "no progress on stderr")
	jsonFile := fs.String("json", "", "also write the JSON report to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (generation included; pprof -focus picks a figure's calls) to this file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: deltabench [--quick] [--only P1,P3] [-o table|json] [--json file] [--tmp dir] [--cpuprofile file] [-q]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // -h asked for the usage, which Parse printed
		}
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	out, err := newOutput(*format, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "deltabench:", err)
		return 2
	}
	ids, err := bench.ParseOnly(*only)
	if err != nil {
		fmt.Fprintln(stderr, "deltabench:", err)
		return 2
	}
	if len(ids) == 0 {
		ids = bench.FigureIDs()
	}
	cfg := bench.FullConfig()
	if *quick {
		cfg = bench.QuickConfig()
	}

	env := &bench.Env{Log: stderr}
	if *quiet {
		env.Log = nil
	}
	dir, err := os.MkdirTemp(*tmp, "deltabench-")
	if err != nil {
		fmt.Fprintln(stderr, "deltabench:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	env.TempDir = dir

	stopServices, code := startServices(ctx, env, ids, dir, stderr, *quiet)
	defer stopServices()
	if code != 0 {
		return code
	}
	if wd, err := os.Getwd(); err == nil {
		env.Python = bench.FindPython(wd)
	}
	if env.Python == "" && slices.Contains(ids, "P3") && os.Getenv("CI") == "true" {
		fmt.Fprintln(stderr, "deltabench: no python with deltalake for P3 (CI=true, so this fails; scripts/test.sh runs scripts/install-interop.sh)")
		return 1
	}
	setChildren(env)
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "deltabench:", err)
			return 1
		}
		defer stop()
	}
	rep, runErr := bench.Run(ctx, env, cfg, ids)
	if err := out.Report(rep); err != nil {
		fmt.Fprintln(stderr, "deltabench:", err)
		return 1
	}
	if *jsonFile != "" {
		if err := writeJSON(*jsonFile, rep); err != nil {
			fmt.Fprintln(stderr, "deltabench:", err)
			return 1
		}
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "deltabench:", runErr)
		return 1
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return 1
	}
	return 0
}

// startServices starts the servers the figures ids need, in dir: MinIO for
// the S3 figures, a Kafka broker for P9. A server that does not start
// skips its figures, except under CI=true, where code is 1. stop closes
// the servers started (also when code is not 0).
func startServices(ctx context.Context, env *bench.Env, ids []string, dir string, stderr io.Writer, quiet bool) (stop func(), code int) {
	var closers []func() error
	stop = func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}
	if slices.ContainsFunc(ids, needsS3) {
		m, fail := startOne(ctx, dir, stderr, &closers, testenv.StartServer,
			"scripts/install-minio.sh", "the MinIO figures are skipped")
		if fail {
			return stop, 1
		}
		env.S3 = m
	}
	if slices.Contains(ids, "P9") {
		k, fail := startOne(ctx, dir, stderr, &closers, testenv.StartKafkaBroker,
			"scripts/install-kafka.sh", "P9 (Kafka) is skipped: run scripts/install-kafka.sh to measure it")
		if fail {
			return stop, 1
		}
		env.Kafka = k
		if k != nil && !quiet {
			fmt.Fprintf(stderr, "deltabench: Kafka broker at %s started in %v\n", k.Addr, k.StartTime.Round(time.Millisecond))
		}
	}
	return stop, 0
}

// setChildren makes env start the figures' child processes (memory, Arrow,
// Kafka, contention, RSS measurements) as this executable.
func setChildren(env *bench.Env) {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	child := func(name string) func(ctx context.Context, arg string) *exec.Cmd {
		return func(ctx context.Context, arg string) *exec.Cmd { return exec.CommandContext(ctx, exe, name, arg) }
	}
	env.MemoryChild = child(memoryChildCmd)
	env.ArrowChild = child(arrowChildCmd)
	env.KafkaChild = child(kafkaChildCmd)
	env.ContentionChild = child(contentionChildCmd)
	env.RSSChild = child(rssChildCmd)
}

// startOne starts one server (start in dir) and adds its Close to
// closers. A server that does not start is reported by notStarted (script,
// skipped) and s is the zero S (nil); fail is notStarted's answer.
func startOne[S interface{ Close() error }](ctx context.Context, dir string, stderr io.Writer, closers *[]func() error,
	start func(context.Context, string) (S, error), script, skipped string) (s S, fail bool) {
	s, err := start(ctx, dir)
	if err != nil {
		var zero S
		return zero, notStarted(stderr, err, script, skipped)
	}
	*closers = append(*closers, s.Close)
	return s, false
}

// notStarted reports on stderr that a server (MinIO, Kafka) did not start
// (err): with CI=true it says that this fails, as the install script
// should have run, and returns true; otherwise it says what is skipped and
// returns false.
func notStarted(stderr io.Writer, err error, script, skipped string) (fail bool) {
	if os.Getenv("CI") == "true" {
		fmt.Fprintf(stderr, "deltabench: %v (CI=true, so this fails; scripts/test.sh runs %s)\n", err, script)
		return true
	}
	fmt.Fprintf(stderr, "deltabench: %v; %s\n", err, skipped)
	return false
}

// startCPUProfile starts a CPU profile written to file; stop ends it and
// closes the file.
func startCPUProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeJSON writes the report as JSON to file.
func writeJSON(file string, rep *bench.Report) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := (jsonOutput{f}).Report(rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// needsS3 reports whether figure id runs on MinIO.
func needsS3(id string) bool {
	return id == "P1" || id == "P2" || id == "P4" || id == "P6" || id == "P7" || id == "P10" || id == "R1"
}
