// Package testenv starts the external services deltakit's tests and
// benchmarks need. For now that is one: a MinIO server, so S3 code runs
// against a real S3 API.
//
// StartServer and (*MinIO).Close run a server without a testing.TB, for the
// deltabench command; StartMinIO wraps them for tests, skipping or failing
// the test when no server can run. It runs the MinIO server as a separate
// program (AGPL) and talks to it over HTTP with minio-go (Apache-2.0); it
// never links MinIO's server code.
package testenv
