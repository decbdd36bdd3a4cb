// Package testenv starts the external services deltakit's tests and
// benchmarks need: a MinIO server, so S3 code runs against a real S3 API,
// and a single-node Apache Kafka broker (KRaft), so the Kafka ingest runs
// against real transactions and read_committed fetches.
//
// StartServer and (*MinIO).Close run a server without a testing.TB, for the
// deltabench command; StartMinIO wraps them for tests, skipping or failing
// the test when no server can run. It runs the MinIO server as a separate
// program (AGPL) and talks to it over HTTP with minio-go (Apache-2.0); it
// never links MinIO's server code.
//
// StartKafkaBroker and (*Kafka).Close run a broker (a Java process, the
// jars installed by scripts/install-kafka.sh); StartKafka wraps them for a
// test, KafkaUnavailable for tests that share one broker. The same rules
// apply: a missing install skips, or fails with CI=true. The broker has a
// PLAINTEXT, a SASL_PLAINTEXT (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN) and an
// SSL listener (certificates generated with crypto/x509 at each start,
// client certificates required), so that one broker serves the tests of
// plain and secured connections alike.
package testenv
