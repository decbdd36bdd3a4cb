package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// Exit codes of deltactl.
const (
	exitOK           = 0
	exitError        = 1
	exitUsage        = 2
	exitVerifyFailed = 3
	// exitInterrupted is the shell's code for a command ended by SIGINT
	// (128 + 2); SIGTERM ends it the same way.
	exitInterrupted = 130
)

// env is what the process gives deltactl: streams, whether they are a
// terminal, and the environment. Tests pass their own.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	tty            bool // stdout and stderr are terminals: progress bars may show
	getenv         func(string) string
	// now, when set, is the clock of commits, file modification times and
	// txn actions (tests pin it); nil means time.Now.
	now func() time.Time
}

// usageError marks an error in the command line: exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// errVerifyFailed is returned by verify when it found a problem (after the
// report was printed): exit code 3.
var errVerifyFailed = errors.New("verification failed")

// app holds the global flags and the environment of one run.
type app struct {
	env
	output    string
	endpoint  string
	region    string
	pathStyle bool
	verbose   bool
	logFormat string
	progress  bool
	logger    *slog.Logger
}

// run executes deltactl with args and returns the exit code.
func run(ctx context.Context, args []string, e env) int {
	if e.getenv == nil {
		e.getenv = func(string) string { return "" }
	}
	a := &app{env: e}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	switch {
	case errors.Is(err, errVerifyFailed):
		return exitVerifyFailed
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		// A signal ended the work (main's context): say so, as a shell
		// expects, instead of a "context canceled" error.
		fmt.Fprintf(e.stderr, "deltactl: interrupted: %v\n", err)
		return exitInterrupted
	case isUsageError(err):
		fmt.Fprintf(e.stderr, "deltactl: %v\n", err)
		if cmd != nil {
			fmt.Fprintf(e.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return exitUsage
	default:
		fmt.Fprintf(e.stderr, "deltactl: error: %v\n", err)
		return exitError
	}
}

func isUsageError(err error) bool {
	var ue *usageError
	if errors.As(err, &ue) {
		return true
	}
	// cobra's own command-line errors.
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most", "required flag"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// newRootCmd builds the command tree; every call returns a fresh tree bound
// to a (no package-level state).
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "deltactl",
		Short: "Inspect and maintain Delta Lake tables",
		Long: `deltactl inspects and maintains Delta Lake tables on the local filesystem
or on S3-compatible storage (AWS S3, MinIO), and ingests Parquet, CSV and
NDJSON files into them, optionally as an exactly-once stream of epochs.

A <table> is a URI (s3://bucket/prefix, file:///abs/path) or a plain path.
S3 credentials and region come from the standard AWS environment
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE, ...;
region us-east-1 when none is set); AWS_ENDPOINT_URL=http://localhost:9000
alone points deltactl at a local MinIO (path style for localhost and IP
endpoints; AWS_VIRTUAL_HOSTED_STYLE_REQUEST and AWS_ALLOW_HTTP as for
deltalake), and so do --endpoint, --path-style and --region.

Output is a human-readable table, or with -o json one stable JSON document
per command (see cmd/deltactl/README.md). Exit codes: 0 ok, 1 error,
2 usage error, 3 verification failed.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(cmd, a.output); err != nil {
				return err
			}
			logger, err := newLogger(a.stderr, a.logFormat, a.verbose)
			if err != nil {
				return err
			}
			a.logger = logger
			return nil
		},
	}
	root.SetVersionTemplate(versionView(debug.ReadBuildInfo()).String() + "\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table or json (cat and changes also take csv and jsonl, cat arrow and parquet: the --format names)")
	pf.StringVar(&a.endpoint, "endpoint", firstNonEmpty(a.getenv("AWS_ENDPOINT_URL_S3"), a.getenv("AWS_ENDPOINT_URL")),
		"S3 endpoint URL, e.g. http://127.0.0.1:9000 for MinIO (default $AWS_ENDPOINT_URL_S3 or $AWS_ENDPOINT_URL)")
	pf.BoolVar(&a.pathStyle, "path-style", false, "address S3 buckets in the URL path (default for localhost and IP endpoints; else $AWS_VIRTUAL_HOSTED_STYLE_REQUEST=false)")
	pf.StringVar(&a.region, "region", "", "AWS region (default $AWS_REGION, $AWS_DEFAULT_REGION, the AWS config file, else us-east-1)")
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "log debug messages to stderr")
	pf.StringVar(&a.logFormat, "log-format", "text", "format of the log messages on stderr: text (slog's key=value lines) or json (one JSON object a line)")
	pf.BoolVar(&a.progress, "progress", true, "show progress bars on long work when stdout is a terminal")

	root.AddCommand(
		newVersionCmd(a),
		newHistoryCmd(a),
		newLogCmd(a),
		newSnapshotCmd(a),
		newFilesCmd(a),
		newSchemaCmd(a),
		newTxnCmd(a),
		newCatCmd(a),
		newChangesCmd(a),
		newCreateCmd(a),
		newIngestCmd(a),
		newCheckpointCmd(a),
		newVacuumCmd(a),
		newOptimizeCmd(a),
		newDeleteCmd(a),
		newUpdateCmd(a),
		newMergeCmd(a),
		newRestoreCmd(a),
		newAlterCmd(a),
		newVerifyCmd(a),
		newCleanupCmd(a),
		newReportCmd(a),
	)
	// cobra adds its completion command at Execute; add it now so that
	// guardSubcommands covers it too ("deltactl completion zsh2" is a usage
	// error, not help and exit 0).
	root.InitDefaultCompletionCmd()
	guardSubcommands(root)
	return root
}

// newLogger returns the one logger of a run, which every library call of
// deltactl is given (so that no message goes through another handler):
// slog's text or JSON handler (format "text" or "json") on w, at Warn, or
// at Debug with verbose.
func newLogger(w io.Writer, format string, verbose bool) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelWarn}
	if verbose {
		opts.Level = slog.LevelDebug
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format %q: want text or json", format)
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the deltactl version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.out().Version(versionView(debug.ReadBuildInfo()))
		},
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// rowFormats returns the row formats (--format) of the command named
// name, in the order its help lists them: cat and changes print rows, the
// other commands none.
func rowFormats(name string) []string {
	switch name {
	case "cat":
		return []string{"table", "csv", "jsonl", "arrow", "parquet"}
	case "changes":
		return []string{"table", "csv", "jsonl"}
	}
	return nil
}

// checkOutput returns a usage error when cmd does not take -o output.
// Every command takes table and json; a command printing rows also takes
// its --format names (-o and --format are aliases there, see
// app.rowFormat). A row format of another command is refused naming the
// commands that take it.
func checkOutput(cmd *cobra.Command, output string) error {
	if output == "table" || output == "json" || slices.Contains(rowFormats(cmd.Name()), output) {
		return nil
	}
	takes := []string{"table", "json"}
	for _, f := range rowFormats(cmd.Name()) {
		if f != "table" {
			takes = append(takes, f)
		}
	}
	var by []string
	for _, name := range []string{"cat", "changes"} {
		if slices.Contains(rowFormats(name), output) {
			by = append(by, name)
		}
	}
	if len(by) == 0 {
		return usagef("invalid value %q for -o/--output: want table or json (cat and changes also take csv and jsonl, cat arrow and parquet)", output)
	}
	what := ""
	if b := binaryOutput(output); b != "" {
		what = " (the rows as " + b + ")"
	}
	return usagef("-o %s is for %s only%s; %s takes -o %s", output, strings.Join(by, " and "), what, cmd.CommandPath(), orList(takes))
}

// orList joins names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// exactArgs is cobra.ExactArgs with a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			// "deltactl: cat takes 1 argument(s), got 0 (deltactl cat <table> [flags])":
			// main already says deltactl, and the use line names the arguments.
			name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
			return usagef("%s takes %d argument(s), got %d (%s)", name, n, len(args), cmd.UseLine())
		}
		return nil
	}
}

func noArgs(cmd *cobra.Command, args []string) error { return exactArgs(0)(cmd, args) }

// out returns the Output for the -o flag.
func (a *app) out() Output {
	if a.output == "json" {
		return newJSONOutput(a.stdout)
	}
	return newTextOutput(a.stdout)
}

// storeOptions returns the store options of the global flags (S3
// endpoint, path style, region).
func (a *app) storeOptions() []table.Option {
	var opts []table.Option
	if a.endpoint != "" {
		opts = append(opts, table.WithS3Endpoint(a.endpoint))
	}
	if a.pathStyle {
		opts = append(opts, table.WithS3PathStyle(true))
	}
	if a.region != "" {
		opts = append(opts, table.WithS3Region(a.region))
	}
	return opts
}

// tableOptions returns the table options of the global flags plus opts.
// Due checkpoints are written inside the commit (table.WithSyncCheckpoints):
// the process exits right after its writes, which would drop a checkpoint
// still being written in the background.
func (a *app) tableOptions(opts ...table.Option) []table.Option {
	base := []table.Option{table.WithLogger(a.logger), table.WithSyncCheckpoints()}
	if a.now != nil {
		base = append(base, table.WithClock(a.now))
	}
	base = append(base, a.storeOptions()...)
	return append(base, opts...)
}

// openTable opens the table at uri with the global flags.
func (a *app) openTable(ctx context.Context, uri string, opts ...table.Option) (*table.Table, error) {
	return table.Open(ctx, uri, a.tableOptions(opts...)...)
}

// onTable is a RunE that opens the table its first argument names with the
// global flags and runs fn on it.
func (a *app) onTable(fn func(cmd *cobra.Command, t *table.Table) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		t, err := a.openTable(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return fn(cmd, t)
	}
}

// onStore is onTable for the commands that read the log itself: fn gets
// the store of the table at args[0], which need not load as a table.
func (a *app) onStore(fn func(cmd *cobra.Command, store table.Store) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		store, err := a.openStore(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return fn(cmd, store)
	}
}

// createTable creates the table at uri with the global flags.
func (a *app) createTable(ctx context.Context, uri string, sch *schema.StructType, opts ...table.Option) (*table.Table, error) {
	return table.Create(ctx, uri, sch, a.tableOptions(opts...)...)
}

// openStore opens the store rooted at the table uri.
func (a *app) openStore(ctx context.Context, uri string) (table.Store, error) {
	return table.OpenStore(ctx, uri, a.storeOptions()...)
}
