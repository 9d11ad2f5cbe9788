// Package group is the classic consumer group coordinator: Kafka's
// GroupMetadataManager/OffsetMetadataManager for groups using the classic
// rebalance protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, with the
// client doing the assignment, eager or cooperative), and committed offsets.
//
// # Layout
//
//   - Shard (shard.go, join.go, sync.go, offsets.go, admin.go) is the state of
//     one __consumer_offsets partition: the groups that hash to it
//     (PartitionFor: Java's String.hashCode, Utils.abs, modulo the partition
//     count) and their offsets. It is a deterministic state machine: every
//     method takes the time as an argument, member ids come from an injected
//     generator, and effects are returned in a coord.Output — records to
//     append and replies to parked requests. It has no goroutines, locks,
//     clocks or I/O; timers are a keyed deadline set (timers.go) the runtime
//     polls through NextDeadline/Tick.
//   - Coordinator (coordinator.go) is the thin shell: it creates
//     __consumer_offsets on first use (FindCoordinator, through the
//     controller), loads the partitions this broker leads into
//     internal/coord's runtime (one owner goroutine per partition) when it
//     becomes their leader and unloads them when it stops being it
//     (OnElection, OnResignation: the broker calls them as it applies the
//     metadata), and turns each request into an op on the right shard; a
//     group whose partition is not loaded here answers NOT_COORDINATOR.
//   - records.go is the serialisation, the package's only kmsg user
//     (internal/lint holds it to that).
//
// # State machine
//
// Empty → PreparingRebalance → CompletingRebalance → Stable, as Kafka's
// ClassicGroupState. A join phase ends when every member has rejoined (not
// for an Empty group's first rebalance, which waits
// group.initial.rebalance.delay.ms, extended while members keep arriving, up
// to the rebalance timeout) or when the longest member rebalance timeout
// passes (dynamic members that did not rejoin are removed). Members then have
// the rebalance timeout to SyncGroup; the leader's SyncGroup carries the
// assignment. A member is removed when its session timeout passes without a
// heartbeat (members parked in JoinGroup/SyncGroup are exempt; a new member's
// first join is bounded by 5 minutes). Static members (group.instance.id)
// rejoin under a new member id without a rebalance while the group is Stable
// and the selected protocol does not change; the old id is fenced
// (FENCED_INSTANCE_ID). group.max.size bounds members; JoinGroup v4+ new
// dynamic members first get MEMBER_ID_REQUIRED.
//
// Offsets: a group's members commit with their generation; a commit with
// generation -1 and no member is accepted only while the group is Empty, and
// creates a "simple" group (no protocol type) if needed. Offsets expire
// (KIP-211) offsets.retention.minutes after the group became Empty, or, for
// Stable consumer groups, after their commit for topics no member subscribes
// to, or at the expire timestamp an OffsetCommit v2-v4 asked for; the check
// runs every offsets.retention.check.interval.ms, and an Empty group left
// without offsets is deleted. When a topic is deleted, every loaded shard
// tombstones all groups' offsets of it (Kafka's onPartitionsDeleted), so a
// topic created again under the name starts without them.
//
// # On-disk format (__consumer_offsets, Kafka's schemas)
//
//   - offset commit: key OffsetCommitKey v1 (group, topic, partition), value
//     OffsetCommitValue v3 (offset, leader epoch, metadata, commit
//     timestamp), v1 with an expire timestamp for v2-v4 retention times;
//   - group metadata: key GroupMetadataKey v2 (group), value
//     GroupMetadataValue v3 (protocol type, generation, protocol, leader,
//     current state timestamp, members with instance id, client id and
//     host, timeouts, subscription and assignment), written when a join phase
//     empties the group, when the leader's assignment arrives, and when a
//     static member's id changes;
//   - tombstones (null value) for deleted offsets and groups;
//   - transactional offset commits (TxnOffsetCommit): the same offset commit
//     records in a transactional batch of the producer, and the producer's
//     COMMIT or ABORT marker, which the group coordinator writes itself
//     (WriteTxnMarkers for a __consumer_offsets partition lands here), so
//     state and log agree. Until its marker an offset is pending: invisible
//     to OffsetFetch, UNSTABLE_OFFSET_COMMIT with RequireStable; COMMIT
//     materialises it unless a plain commit of the partition was written
//     after it (by log position, so replay decides the same way), ABORT
//     drops it (txn_offsets.go). A group with pending offsets is not
//     expired.
//
// A shard's durable state is exactly the replay of these records (Replay;
// key versions of the consumer/share protocols are skipped); Loaded then
// gives every loaded member a fresh session. Parked requests and
// PreparingRebalance/CompletingRebalance progress are in memory only, as in
// Kafka: after a restart a group resumes from its last Stable (or Empty)
// generation.
//
// # Concurrency
//
// A Shard is used only by its owner goroutine (internal/coord). Coordinator
// methods are safe for concurrent use; JoinGroup and SyncGroup block the
// calling connection's goroutine only, until the rebalance answers them.
package group
