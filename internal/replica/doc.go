// Package replica routes produce and fetch to the partitions this broker
// hosts (Kafka's ReplicaManager) and owns the high watermark.
//
// Single node: the broker is the only replica and the whole ISR. The high
// watermark is the leader's durable log end offset when gregor.ack.fsync is
// on (so a consumer never sees a record a crash could take back) and the log
// end offset otherwise. An acks=1 or acks=all produce returns once the high
// watermark covers its batch; with fsync on that costs one group-committed
// fdatasync shared by every concurrent producer of the partition. acks=0
// produces schedule the sync in the background.
//
// Delayed operations: a long-poll fetch registers a waiter on each partition
// it reads and sleeps until any high watermark moves, its max wait passes or
// its context ends; nothing spins and no goroutine is started per request.
//
// Concurrency: the partition map is guarded by mu; each Partition's waiters
// by its own mutex; logs are safe for concurrent use.
package replica
