// Package broker is the composition root: it builds every subsystem from the
// broker configuration and starts and stops them in order.
//
// New refuses a configuration that asks for TLS, SASL or ACLs, which Gregor
// does not have yet (config.SecurityRequested names each setting), so an
// operator who asked for protection never gets an open broker.
//
// Start: configuration → log dirs (package logdirs: lock .lock in every dir
// for the process's life, then check every meta.properties agrees and find
// the metadata; format them when all are empty; anything else inconsistent
// stops the start with a message per dir, nothing written) → controller
// (the metadata image from the dir logdirs found) → internal topics check
// (internaltopics.go: an internal topic not yet created must be creatable and
// writable as its broker configs describe it, offsets.topic.* and
// transaction.state.log.*, or the start stops naming them) → log manager
// (loads and recovers every partition log; a log the metadata does not know,
// by topic, partition or topic id (strayReason, Kafka's isStrayKraftReplica),
// is renamed stray and kept; /readyz "log recovery") → replica manager
// hosting every partition of every topic →
// group coordinator (replays __consumer_offsets in the background) →
// request handler → Kafka listener → admin HTTP listener → background jobs
// (the log manager's, then the log cleaner when log.cleaner.enable, with its
// status at GET /v1/partitions/{topic}/{partition}/cleaner and its metrics)
// → the admin JSON API under /v1/ and the web console (admin.RegisterAPI and
// admin.RegisterConsole over Source()).
//
// Source() is the admin.Source the JSON API and the web console read: the
// read model in internal/admin/source, built here over the controller,
// replica manager, log manager, cleaner and group coordinator.
//
// Shutdown (SIGTERM/SIGINT in gregor serve): stop the group coordinator
// (parked JoinGroup/SyncGroup requests are answered NOT_COORDINATOR so they
// do not hold the drain), stop accepting connections and
// let in-flight requests finish, stop the admin listener, stop the log
// cleaner (a cleaning under way is abandoned), then close the log manager,
// which flushes every log, writes the checkpoint files and the clean-shutdown
// marker, and last release the log dirs' locks.
//
// Metrics (metrics.go): /metrics carries, besides the listener's request and
// socket counters (package server), the replica manager's BrokerTopicMetrics
// counters and log flush histogram (package replica), the cleaner's gauges
// (package cleaner), and gauges computed at scrape time from the hosted
// partitions, the metadata image and the group coordinator. Names follow the
// Prometheus JMX exporter's names for Kafka's MBeans; docs/metrics.md lists
// every series with its MBean, and a test keeps that list equal to what is
// exposed. Per-partition series appear while the dynamic broker config
// gregor.metrics.partition.series.enable is true (read at each scrape).
//
// Log dir health (onLogDirChange, told by the log manager): each log dir is
// a readiness condition named "log dir <path>": ready; ready with a warning
// while it is full (gregor.log.dir.min.free.bytes, read at each free-space
// check: produce is refused, fetches are served, and a load balancer should
// not act); not ready once offline. When the last dir goes offline the
// broker stops by itself: Run shuts down as on a signal and returns the
// error, and gregor serve exits non-zero with it (Kafka halts then).
//
// Configuration changes arrive as controller changes and are applied here:
// new topics and partitions are hosted, deleted ones dropped, topic and
// cluster-default config changes re-resolved into each log's configuration.
package broker
