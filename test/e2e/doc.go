// Package e2e holds Gregor's end-to-end tests: real Kafka clients (franz-go's
// kgo and kadm; kcat, confluent-kafka-python and kafkajs scripts in
// testdata/txn_clients through os/exec) against real brokers on loopback.
//
// Most tests start an in-process broker with internal/broker/brokertest. The
// tests that need a process to kill (durability), a second process on the
// same data dir, a start that must be refused, or the command line itself
// run the gregor binary, which TestMain builds once into a temp dir (or takes
// from $GREGOR_BIN when set, as scripts/test.sh does). The binary is started
// with --listen 127.0.0.1:0 and --admin-listen 127.0.0.1:0, and the test reads
// the bound addresses from the banner it prints, so tests never collide on a
// port with each other or with a broker a developer runs on 9092.
//
// Invariants the tests rely on: every wait is a poll with a deadline (no
// sleeps to wait for something), every loop is bounded, and all traffic goes
// to 127.0.0.1. kcat tests skip when kcat is not on PATH; the
// confluent-kafka-python and kafkajs tests skip when their library is not
// installed (scripts/test.sh installs both), and under CI fail instead
// (kafkajs: unless npm could not reach its registry).
//
// The package has no non-test code besides this file.
package e2e
