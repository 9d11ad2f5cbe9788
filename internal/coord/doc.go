// Package coord is the coordinator runtime shared by the group coordinator
// and the transaction coordinator: Kafka's CoordinatorRuntime for a single
// node.
//
// A coordinator's state is split by the partitions of its internal topic
// (__consumer_offsets for groups). Each loaded partition has one shard, a
// deterministic state machine, owned by exactly one goroutine (the shard's
// owner); nothing else touches it, so shards need no locks.
//
// # Ops
//
// Every request becomes an Op run on the owner goroutine. An op reads and
// changes the shard and fills an Output: records to append to the partition
// (key and value bytes, a nil value being a tombstone) and replies, each to a
// Waiter. Each op is handed its own Waiter; it may answer it at once, keep it
// (a JoinGroup parked until the rebalance completes) or answer other ops'
// waiters (completing a rebalance answers every parked member). Timers work
// the same way: the shard reports its next deadline and the runtime calls
// Tick when it passes.
//
// # Durability
//
// The owner drains up to maxOpsPerRound queued ops, runs them in order, then
// appends their records with log.OriginCoordinator through the replica
// manager with acks=-1: one v2 batch per round (more only when the round
// exceeds the partition's max.message.bytes; one op's records always share a
// batch, so each op's writes are atomic). An op may also write a
// transactional producer's records (Output.WriteTxn: a batch of their own
// with the producer's id and epoch, a transactional offset commit) and a
// transaction marker (Output.WriteMarker, appended with the log's marker
// checks); writes go out in op order. Effects (Output.Effect) are handed to
// Options.OnDurable once the round's writes are durable. Replies of the round — reads
// included — are released only after the append returns, i.e. once the
// records are under the high watermark (fsynced when gregor.ack.fsync is
// on), like an acks=all produce. No client ever sees state that a crash could
// take back.
//
// The shard applies an op's effects when the op runs, before the append. If
// the append fails, or one op's records cannot fit in a batch, every reply of
// the round is turned into the (normalised) error and the shard is rebuilt by
// replaying the partition, so the invariant "state = replay of the log" is
// restored; waiters still parked in the old shard are answered
// NOT_COORDINATOR and their clients rejoin. Ops of the round queued after an
// op whose records are too large run again on the rebuilt shard.
//
// # Loading
//
// Load starts a partition's owner, which replays the partition from its log
// start offset to its log end offset before serving. Transactional records
// and markers go to a shard that implements TxnShard (ReplayTxn,
// ReplayMarker); other shards skip them. While it
// loads, Do fails with COORDINATOR_LOAD_IN_PROGRESS; for partitions without an
// owner it fails with NOT_COORDINATOR, as Kafka's coordinators do.
//
// # Concurrency
//
// Do may be called from any goroutine and blocks until its op is answered or
// its context ends (an abandoned answer is dropped). The runtime's map of
// owners is guarded by mu; Load, Unload and Close may be called from any
// goroutine (Unload and Close wait for the owners to stop; an owner finishes
// its round first, so an acknowledged write is never abandoned half way).
package coord
