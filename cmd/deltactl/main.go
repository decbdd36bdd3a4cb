// Command deltactl inspects and maintains Delta tables on the local
// filesystem or on S3-compatible storage, and ingests Parquet, CSV and
// NDJSON files into them, optionally as an exactly-once stream of epochs.
//
// Usage:
//
//	deltactl [global flags] <command> [flags] <table>
//
// A table is a URI ("s3://bucket/prefix", "file:///abs/path") or a plain
// path. Every command prints a human-readable table by default and a
// stable JSON document with -o json; README.md in this directory documents
// the JSON of each command. Exit codes: 0 success, 1 error, 2 usage error,
// 3 verification failed (verify found a problem).
//
// S3 settings come from the standard AWS environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE, shared config files),
// plus --endpoint, --path-style and --region for MinIO and other
// S3-compatible servers.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

// version is the deltakit release this binary belongs to.
const version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	tty := term.IsTerminal(int(os.Stdout.Fd())) && term.IsTerminal(int(os.Stderr.Fd()))
	code := run(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, tty: tty, getenv: os.Getenv})
	stop()
	os.Exit(code)
}
