// Package broker is the composition root: it builds every subsystem from the
// broker configuration and starts and stops them in order.
//
// Start: configuration → controller (metadata image; formats new log dirs)
// → log manager (loads and recovers every partition log; /readyz "log
// recovery") → replica manager hosting every partition of every topic →
// group coordinator (replays __consumer_offsets in the background) →
// request handler → Kafka listener → admin HTTP listener → background jobs
// (the log manager's, then the log cleaner when log.cleaner.enable, with its
// status at GET /v1/partitions/{topic}/{partition}/cleaner and its metrics).
//
// Shutdown (SIGTERM/SIGINT in gregor serve): stop the group coordinator
// (parked JoinGroup/SyncGroup requests are answered NOT_COORDINATOR so they
// do not hold the drain), stop accepting connections and
// let in-flight requests finish, stop the admin listener, stop the log
// cleaner (a cleaning under way is abandoned), then close the log manager,
// which flushes every log, writes the checkpoint files and the clean-shutdown
// marker.
//
// Configuration changes arrive as controller changes and are applied here:
// new topics and partitions are hosted, deleted ones dropped, topic and
// cluster-default config changes re-resolved into each log's configuration.
package broker
