// Package replica routes produce and fetch to the partitions this broker
// hosts (Kafka's ReplicaManager) and owns the high watermark.
//
// Roles: each hosted partition has the Role the metadata image gives it
// (HostAs, SetRole; the broker applies every published metadata image):
// leader, or follower of LeaderID (no leader: -1), with the leader epoch,
// partition epoch and the sizes of the replica set and ISR. Only the
// leader takes client and coordinator appends; anything else answers
// NOT_LEADER_OR_FOLLOWER (NotLeaderError). An append holds the role's read
// lock from the check to the write, and a role change its write lock, so no
// record is written under an epoch the partition has left; becoming leader
// in a new epoch starts that epoch at the log end in the epoch cache
// (Kafka's makeLeader). Followers fetch nothing yet: replication (#15)
// adds the fetchers, and partitions keep one replica until then.
//
// The high watermark is the leader's durable log end offset when gregor.ack.fsync is
// on (so a consumer never sees a record a crash could take back) and the log
// end offset otherwise. An acks=1 or acks=all produce returns once the high
// watermark covers its batch; with fsync on that costs one group-committed
// fdatasync shared by every concurrent producer of the partition.
// AppendNoWait starts that fsync on its own goroutine as soon as the batch
// is written, and Await waits for all of a request's partitions, so the
// partitions of one produce request sync concurrently and each one's sync
// overlaps the writes of the partitions after it. The api layer appends in
// the connection's request order and awaits afterwards, on the connection's
// writer, so a client's pipelined requests are appended while earlier ones
// sync and one fsync covers them all. acks=0 produces schedule
// the sync in the background.
//
// Failed and full disks: a partition whose log dir is offline (a write or
// fsync in it failed; see packages logmgr and log) is Offline: the api layer
// answers it KAFKA_STORAGE_ERROR, and its log refuses appends and answers
// every waiting acknowledgement with the failure, so nothing appended after
// the failure is acknowledged, however many requests are in flight. Await
// also answers a batch an earlier fsync covered with the failure when its
// log has failed by the time Await returns: a connection decides its answers
// in request order (package server pipelines requests), so once it has
// answered one produce of a partition with the failure it acknowledges
// nothing after it, whichever fsync goroutine returned first. A
// client append is first admitted by the partition's log dir against its
// free-space reserve (logmgr.LogDir.Admit, two atomic operations while there
// is room); refused, it is log.ErrNoSpace, KAFKA_STORAGE_ERROR on the wire,
// which clients retry with backoff, and nothing is written. Coordinator
// appends (group offsets) are not held to the reserve: it is kept for them.
//
// The high watermark never moves back on a leader: every completed fsync
// advances it from the recovery point it read, concurrently with the others,
// and log.MaybeIncrementHighWatermark applies only a rise, so an advance that
// read before a later sync finished cannot take back what that sync's
// acknowledgements and fetches already exposed.
//
// Delayed operations: a long-poll fetch registers a waiter on each partition
// it reads and sleeps until any high watermark moves, its max wait passes or
// its context ends; nothing spins and no goroutine is started per request.
// A waiter stays registered, once per partition, from NewWaiter until Done,
// however often it is woken, so a fetch on busy and idle partitions holds
// exactly one entry on each; FetchWaiters counts them (the Fetch purgatory
// gauges).
//
// Replication state: ReplicaState gives a partition's leadership, replica
// set and ISR sizes (from its Role) and min.insync.replicas; its
// UnderMinISR is both the NOT_ENOUGH_REPLICAS check of acks=all appends and
// the UnderMinIsrPartitionCount gauge.
//
// Metrics (metrics.go): TopicMetrics are Kafka's BrokerTopicMetrics
// counters. Appends count bytes in, messages in (a duplicate idempotent
// batch counts nothing) and bytes rejected (MESSAGE_TOO_LARGE) on the
// partition's cached counters; the api layer counts request partitions,
// failures and bytes out through TopicMetrics.Topic. Per-topic children
// live while the topic has a hosted partition. Flushes the manager waits for
// are timed into kafka_log_logflushstats_logflushrateandtimems.
//
// Concurrency: the partition map is guarded by mu; each Partition's role by
// its roleMu (read-held across an append) and its waiters by its own mutex
// (notify signals under it and never blocks); logs are safe for concurrent
// use.
package replica
