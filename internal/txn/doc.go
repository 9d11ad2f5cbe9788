// Package txn is the transaction coordinator: Kafka's
// TransactionCoordinator, TransactionStateManager and
// TransactionMarkerChannelManager for the transactional ids whose
// __transaction_state partitions this broker leads.
//
// # Layout
//
//   - Shard (shard.go, ops.go, state.go) is the state of one
//     __transaction_state partition: the transactional ids that hash to it
//     (coord.PartitionFor: Java's String.hashCode, Utils.abs, modulo the
//     partition count) with their metadata (Txn). It is a deterministic
//     state machine on the shared internal/coord runtime: every method takes
//     the time as an argument; effects are returned in a coord.Output —
//     records to append, replies, and MarkerJob / NeedProducerID effects the
//     shell carries out once the records are durable. No goroutines, locks,
//     clocks or I/O.
//   - Coordinator (coordinator.go) is the shell: it creates
//     __transaction_state on first use (FindCoordinator), loads the
//     partitions this broker leads into the runtime as the broker publishes
//     their leadership (OnElection, OnResignation; one owner goroutine
//     each, with the partition's leader epoch as coordinator epoch), allocates
//     producer ids (blocks the controller records) when an op asks for one
//     (ErrNeedProducerID: a new transactional id, or a rotation at epoch
//     exhaustion), and runs the marker sender.
//   - markers.go writes a decided transaction's markers through a
//     MarkerWriter (on one node the api package's, the same code that serves
//     WriteTxnMarkers; in a cluster one that routes each partition to its
//     leader), retrying retriable answers with backoff, skipping partitions
//     whose topic is gone, stopping when a leader says the transaction was
//     superseded (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED),
//     then completing the transaction on its shard.
//   - records.go is the serialisation, the package's only kmsg user.
//   - hanging.go is the hanging-transaction detector (beyond Kafka):
//     Diagnose, a pure function of a partition's open transaction
//     (log.OpenTxn) and the coordinator's view of its producer id
//     (Coordinator.ForProducer), classifies what holds the last stable
//     offset back as open, timing_out, completing, unreplicated, orphan or
//     unknown, with what ends it (for an orphan, the kafka-transactions.sh
//     abort command). The admin API and `gregor why lso` show it. A
//     coordinator that does not know the producer id while other brokers
//     coordinate some __transaction_state partitions answers unavailable
//     with Elsewhere set, never "no transaction": the broker then asks the
//     other brokers' coordinators (ListTransactions, DescribeTransactions).
//   - autoabort.go and orphanaborter.go are the opt-in automatic abort of
//     orphans (gregor.transaction.orphan.abort.enable, off by default).
//     Orphans is the pure decision: told each check's classifications, it
//     answers which orphans are due — class orphan at every check, without
//     a break, for gregor.transaction.orphan.abort.min.orphan.ms, and older
//     than transaction.max.timeout.ms (the age counted from the first batch
//     by the broker's clock, else the producer's timestamp, and never less
//     than the time watched); any other class, or not being seen, starts
//     the wait again. OrphanAborter is its shell: every
//     transaction.abort.timed.out.transaction.cleanup.interval.ms it
//     classifies the holders of the partitions this broker leads (even when
//     disabled, so the wait shows in /v1 and the console) and, enabled,
//     writes for each due orphan the ABORT marker kafka-transactions.sh
//     abort writes (its producer id, epoch and coordinator epoch, through
//     the MarkerWriter), logging each at WARN (ERROR when the write fails;
//     it is retried at the next check) and counting it. The tracking is in
//     memory: after a restart an orphan waits min.orphan.ms again.
//
// # State machine (Kafka's TransactionState)
//
// Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
// CompleteAbort; Dead and PrepareEpochFence are transient and never
// written. Every transition is checked against Kafka's valid previous
// states. The commit point is the PrepareCommit (PrepareAbort) record: EndTxn
// is answered once it is durable; the markers follow, and Complete* is
// written only after every partition acknowledged its marker. A load
// re-drives every Prepare* it finds (the first Tick after Loaded hands its
// markers to the shell), so a crash at any point completes the decision.
//
// Kafka's pendingState (CONCURRENT_TRANSACTIONS while an append is in
// flight) needs no field here: the runtime runs ops one at a time and
// releases their replies only once their records are durable, and a failed
// write rebuilds the shard from the log. What remains asynchronous is the
// Prepare* state itself, which answers CONCURRENT_TRANSACTIONS to
// InitProducerId, AddPartitionsToTxn and a retried EndTxn. A producer fenced
// by InitProducerId or by its transaction's timeout
// (transaction.abort.timed.out.transaction.cleanup.interval.ms) gets its
// transaction aborted with a bumped epoch (twice bumped under TV2), and the
// fencing InitProducerId is answered CONCURRENT_TRANSACTIONS until the abort
// completes. Idle transactional ids in Empty or Complete* expire after
// transactional.id.expiration.ms (a tombstone). Deviation: a transactions v2
// implicit add that finds the previous transaction completing waits for it
// (up to 2 s) instead of answering CONCURRENT_TRANSACTIONS at once.
//
// The checks of every API run in Kafka's order with Kafka's codes (ops.go):
// INVALID_PRODUCER_ID_MAPPING for an unknown id or producer id,
// PRODUCER_FENCED for another epoch (the api package rewrites it for old
// request versions), CONCURRENT_TRANSACTIONS while Prepare*, and the EndTxn
// tables of TV1 (EndTxn ≤ v4) and TV2 (v5: a retry carries the epoch before
// the bump).
//
// # On-disk format (__transaction_state, Kafka's schemas)
//
// Key TransactionLogKey v0 (the transactional id); value TransactionLogValue
// v1 (flexible, KIP-915) once transaction.version ≥ 1 is finalized, v0
// before: producer id and epoch, timeout, state, partitions (null for
// Empty), last update and start timestamps, and tags. Deliberate deviation:
// tags 0 and 1 (PreviousProducerId, NextProducerId) are written when set, so
// a coordinator taking over during a producer id rotation completes it;
// Kafka writes them as -1. Tags Gregor does not know are kept when a value
// is rewritten. A tombstone expires an id. lastProducerEpoch is in memory
// only (-1 after a load), as in Kafka.
//
// # Concurrency
//
// A Shard is used only by its owner goroutine. Coordinator methods are safe
// for concurrent use; each blocks until its op's records are durable. The
// marker sender runs one goroutine per transaction being completed, stopped
// by Close. The OrphanAborter runs its checks on one goroutine (Start,
// stopped by Close); Status is safe from any.
package txn
