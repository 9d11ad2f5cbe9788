// Package replica routes produce and fetch to the partitions this broker
// hosts (Kafka's ReplicaManager and Partition), owns the high watermark, and
// replicates: followers fetch from their leaders, leaders track their
// followers and keep the ISR with the controller.
//
// Roles: each hosted partition has the Role the metadata image gives it
// (Assign, from every published image; HostAs and Host for sole replicas):
// leader, or follower of LeaderID (no leader: -1), with the leader epoch,
// partition epoch and the sizes of the replica set and ISR. Only the
// leader takes client and coordinator appends; anything else answers
// NOT_LEADER_OR_FOLLOWER (NotLeaderError). An append holds the role's read
// lock from the check to the write, and a role change its write lock, so no
// record is written under an epoch the partition has left; becoming leader
// in a new epoch starts that epoch at the log end in the epoch cache
// (Kafka's makeLeader). An assignment from an older partition epoch than the
// one applied is ignored.
//
// # Replication (design §2: Kafka 4.2's ISR protocol)
//
// Incarnations. A leadership the metadata still gives an earlier
// incarnation of this broker (it restarted before the controller fenced
// it) is hosted as no leadership (ForIncarnation) until the new
// registration moves it: that process's unsynced records died with it, and
// followers fetching from a shorter leader in the same epoch would
// truncate to it. Kafka gets the same by installing its metadata
// publishers only after registering.
//
// Leader. A leader of several replicas keeps its ISR state in an
// isr.Leader (package isr: the pure state machine; see its doc for the
// rules): followers' log end offsets and caught-up times from their
// fetches, the committed ISR and at most one pending change, the maximal
// ISR. A follower's fetch is checked for divergence before reading
// (DivergingEpoch: KIP-320), reads up to the log end offset, then records
// the follower's progress (FollowerFetched), which may propose adding it to
// the ISR; a fetch that waits for data tells the leader so when it starts
// waiting and when it is answered (FollowerWaiting), so an idle follower's
// caught-up time is current. A follower that cuts its log to match its
// leader keeps what it cut (Partition.LastTruncation: log end and high
// watermark before, where it cut), which the admin views show after an
// unclean election as the records this replica lost. The isr-expiration task (every replica.lag.time.max.ms/2)
// proposes removing lagging followers. Proposals go to the active
// controller through the AlterPartition queue (alterpartition.go, Kafka's
// AlterPartitionManager: batched, one request in flight, retried); answers
// and later metadata settle them. The high watermark is the minimum over
// the maximal ISR of the followers' log end offsets and the leader's own
// durable log end offset (its log end offset without gregor.ack.fsync),
// and it moves only while the committed ISR has at least the effective
// min.insync.replicas (min(min.insync.replicas, replicas), KAFKA-15583).
// Appends wake parked follower fetches; a high watermark rise wakes
// consumers' fetches, and a caught-up follower's whose own high watermark
// (Fetch v18's, KIP-1166, or the one last sent) is behind.
//
// Follower. A follower is fetched by one of num.replica.fetchers fetchers
// per leader (fetcher.go, Kafka's ReplicaFetcherThread) through a
// LeaderEndpoint (the api layer's Fetch v18 with ReplicaState{ReplicaId,
// ReplicaEpoch = broker epoch}, CurrentLeaderEpoch, LastFetchedEpoch and
// LogStartOffset); an answer's records are valid only until the fetcher's
// next fetch (the api layer reads every answer into one buffer), so they
// are appended within the round and never kept. A new leader or leader epoch restarts its fetch from the
// log end offset with the latest epoch of its cache; the leader answers a
// divergence, and the follower truncates where its log last agrees
// (truncationFor, Kafka's getOffsetTruncationState; OffsetForLeaderEpoch
// when it must ask again; a log without epochs truncates to its high
// watermark). Records are appended as they are (OriginReplication) under
// the role's read lock for the epoch they were fetched in, so nothing lands
// after the partition moved on; an answer whose partition was truncated or
// re-added meanwhile is dropped. Under gregor.ack.fsync every partition
// appended to is fsynced before the next fetch, and so is one whose fetch
// offset is past its durable offset (a leader become follower, whose
// acknowledgement fsyncs had not run: syncFetchOffsets), so a follower's
// fetch offset, which the leader counts into the high watermark, is
// durable. One fetch is then one fsync, so its bytes per partition
// (replica.fetch.max.bytes) bound a follower's pace: Gregor's default is
// 10 MiB, Kafka's 1 MiB would take one full batch per fsync.
// Then the follower takes the leader's high watermark (bounded by its own
// log end offset) and log start offset. OFFSET_OUT_OF_RANGE truncates to
// a leader log that ends below (an unclean election) or restarts at one
// that starts past the follower's end; FENCED_LEADER_EPOCH parks the
// partition until newer metadata; other errors back off
// replica.fetch.backoff.ms. A truncation lowers the cleaner's checkpoint
// (ReplicationConfig.OnTruncate).
//
// Acknowledgements (acks.go): acks=1 is answered once the leader holds the
// batch (fsynced under gregor.ack.fsync); acks=all once the high watermark
// passes it (Kafka's DelayedProduce, with no goroutine of its own: whoever
// moves the high watermark answers it), NOT_ENOUGH_REPLICAS before appending
// when the committed ISR is below the effective min.insync.replicas,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the maximal ISR is below it as the
// high watermark passes, or as soon as the committed ISR shrinks below it
// while the produce waits (Kafka lets it time out instead; both are
// indeterminate), NOT_LEADER_OR_FOLLOWER when the leadership moves, and
// REQUEST_TIMED_OUT when the request's timeout ends first.
//
// A sole replica's high watermark is its durable log end offset when
// gregor.ack.fsync is on (so a consumer never sees a record a crash could
// take back) and its log end offset otherwise; the fsync an acknowledgement
// waits for is one group-committed fdatasync shared by every concurrent
// producer of the partition.
// AppendNoWait starts that fsync on its own goroutine as soon as the batch
// is written, and Await waits for all of a request's partitions, so the
// partitions of one produce request sync concurrently and each one's sync
// overlaps the writes of the partitions after it. The api layer appends in
// the connection's request order and awaits afterwards, on the connection's
// writer, so a client's pipelined requests are appended while earlier ones
// sync and one fsync covers them all. acks=0 produces schedule
// the sync in the background.
//
// Transactions: AppendMarker writes a transaction marker (the leader's side
// of WriteTxnMarkers; the log checks its epochs; a follower is
// NOT_LEADER_OR_FOLLOWER) with the same acknowledgement as an append: with
// acks=-1, as Kafka writes markers, it waits for the high watermark to pass
// it and is refused under min.insync.replicas. A follower copies markers
// with its leader's other batches (the log keeps its producer state,
// aborted-transaction index and LSO as the leader's), and a truncation cuts
// them back with the log. StartTransactionVerification hands out the
// log's KIP-890 verification guard and AppendVerifiedNoWait appends a
// client's transactional batch with it.
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
// appends (group offsets, markers) are not held to the reserve: it is kept
// for them. A follower's appends are, by the same check
// (Partition.admit, before the write), except on internal topics, whose
// leader's appends are the coordinators'. A follower append refused by the
// reserve, or by its volume for want of space (log.ErrNoSpace; the log cuts
// back what did not fit), is retried from the log end after
// replica.fetch.backoff.ms, the leader's log start offset still followed
// (DeleteRecords there frees this disk too): the follower falls behind,
// leaves the ISR after replica.lag.time.max.ms, and catches up and rejoins
// once space is freed (the log dir takes appends again at its next
// free-space check). A failed disk stops the fetch.
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
// set and committed ISR sizes (from its Role) and the effective
// min.insync.replicas; its UnderMinISR is both the NOT_ENOUGH_REPLICAS check
// of acks=all appends and the UnderMinIsrPartitionCount gauge.
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
// its roleMu (read-held across an append), its ISR state by replMu (taken
// after roleMu, never before), its waiters and acks=all waiters by its own
// mutex (notify signals under it and never blocks); logs are safe for
// concurrent use. Goroutines (StartReplication to StopReplication): one per
// fetcher, the AlterPartition queue's, and the isr-expiration task; the
// fsyncs of a fetch round run concurrently, eight at a time.
package replica
