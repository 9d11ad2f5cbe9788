// Package isr is the leader's side of Kafka's ISR protocol for one
// partition (Kafka's Partition.partitionState with its Replica states): the
// in-sync replica set and its pending change, what the leader knows of
// every follower, the high watermark the ISR allows, and when a follower
// joins or leaves the ISR. It is a deterministic state machine: no
// goroutines, clocks, files or network; every input carries the time, and a
// change of the ISR comes out as a Proposal for the shell (package replica)
// to send to the controller as AlterPartition.
//
// # States (design §2.4)
//
// The ISR is Committed (what the metadata says), PendingExpand (a follower
// caught up; the proposal adding it is in flight) or PendingShrink (ISR
// members lagged; the proposal removing them is in flight). At most one
// change is in flight. The maximal ISR, which the high watermark and acks=all
// count, is the committed ISR plus a pending expansion's new member: an
// expansion applies at once (stricter, so safe if refused), a shrink only
// once the controller confirms it (shrinking early could advance the high
// watermark on a quorum the controller never accepted). A leader in the
// RECOVERING state (after an unclean election, KIP-704) first proposes its
// ISR as RECOVERED, and grows the ISR only after.
//
// Results (Completed): success at our leader epoch and a partition epoch not
// below ours commits the ISR and partition epoch the controller answered;
// INELIGIBLE_REPLICA and OPERATION_NOT_ATTEMPTED roll back to the committed
// state; UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID, FENCED_LEADER_EPOCH,
// INVALID_UPDATE_VERSION, INVALID_REQUEST and NEW_LEADER_ELECTED leave it
// pending until a metadata update replaces it (Become); anything else asks
// the shell to send the same proposal again. A metadata update at our leader
// epoch with a newer partition epoch commits the image's ISR and drops
// whatever was pending: the metadata won the race with the response.
//
// # Followers (design §2.2, Replica.updateFetchStateOrThrow)
//
// A follower's log end offset is its fetch offset. lastCaughtUpTime moves to
// the fetch time when the fetch offset reaches the leader's log end offset,
// else to the previous fetch's time when it reaches the leader's log end
// offset as of that previous fetch. A fetch that waits for data (a long
// poll, up to replica.fetch.wait.max.ms) is marked Waiting; when it is
// answered the first rule applies again at the answer's time
// (FollowerWaiting), and while it waits at the log end offset the view
// (View) reports the follower caught up now: an idle follower's last
// caught-up time is not up to replica.fetch.wait.max.ms old, as it is when
// only the fetch's arrival counts (Kafka's shows that lag). A fetch naming an older broker epoch
// than the metadata's is refused (KIP-903). A follower is caught up when its
// log end offset equals the leader's or it was caught up within
// replica.lag.time.max.ms.
//
// Becoming leader in a new leader epoch: the leader epoch start offset
// (LESO) is the log end offset; no follower has fetched in the new epoch;
// ISR members are taken as caught up now; every replica outside the new ISR
// loses all it had (design §2.12.8: a replica removed and re-added within
// one metadata batch must not rejoin on state from before); a new leader
// (not the same broker in a new epoch) knows no follower's log end offset.
//
// # Rules
//
//   - High watermark (HighWatermark): none while the committed ISR is
//     smaller than the effective min.insync.replicas, min(min.insync.replicas,
//     replicas) (KAFKA-15583, strict min ISR); else the leader's own offset
//     (its flushed offset under gregor.ack.fsync) lowered to the log end
//     offset of every follower in the maximal ISR, and of every caught-up,
//     eligible follower outside it (so one about to join is not left
//     behind). A follower whose log end offset is unknown holds it back
//     entirely. The shell applies it only upward (log.MaybeIncrementHighWatermark).
//   - Expansion (MaybeExpand, Kafka's maybeExpandIsr and
//     isReplicaIsrEligible): nothing in flight; not in the ISR; fetched in
//     this leader epoch; log end offset ≥ high watermark and ≥ LESO; the
//     broker registered, unfenced, not in controlled shutdown, and the
//     fetch's broker epoch the metadata's; the partition not RECOVERING.
//   - Shrink (MaybeShrink, run every replica.lag.time.max.ms/2): nothing in
//     flight; the ISR followers that are not caught up leave (the leader
//     never does).
//
// Every departure from the ISR is remembered with its cause and time
// (Departure), and Explain says, for a replica outside the ISR, which of the
// expansion rules it does not meet yet: what `gregor why isr` prints.
package isr
