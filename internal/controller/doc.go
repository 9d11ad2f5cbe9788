// Package controller owns the cluster metadata. It holds two things while
// Gregor moves from one node to a cluster:
//
//   - Controller, the single-node metadata owner the broker uses today
//     (below, "Single-node metadata");
//   - Core and Shell, the active controller of a cluster whose metadata is
//     a raft log of metadata records (package metadata): Kafka's
//     QuorumController with ReplicationControlManager,
//     ClusterControlManager and BrokerHeartbeatManager. When the broker is
//     switched to it, Controller and its JSON file go.
//
// # The active controller
//
// Core is a deterministic state machine: no goroutines, clocks, files or
// network. Its inputs carry the current time: LeadershipChanged (raft says
// whether this node leads, in which term), Applied (an entry of the log
// applied, with the image after it, in log order), Submit (a request, see
// requests.go), ProposalFailed (raft dropped a proposal) and Tick. Ready
// returns what to do: at most one entry to propose, replies, the unclean
// and last-known-leader elections that have just applied, and when to call
// Tick next. Shell runs a Core on one goroutine over a Proposer (the raft
// loop) and a clock.Clock.
//
// Claim. Becoming raft leader of term T, the core proposes
// Activation{node, T} and answers every request NOT_CONTROLLER until it has
// applied: then every entry of earlier terms is in the image. Activating
// gives every registered broker a fresh heartbeat session (a new controller
// does not fence the cluster) and starts the timers. Losing leadership, or
// a new term, fails everything pending with NOT_CONTROLLER and drops
// sessions and timers (renounce).
//
// Writes. Requests queue; when no batch is in flight, up to MaxBatchOps of
// them are built one after another against a scratch image (the applied
// image plus the records of the ops before, applied with metadata.Apply in
// the controller's own term), so ops in one batch see each other, and
// proposed as one entry tagged (node, term, seq). Its requests are answered
// when that entry applies, from the scratch image after each op (a
// registration's broker epoch is the entry's index); each reply carries
// that index, so a broker that forwarded a write can wait until it has
// applied it. A batch not applied
// within WriteTimeout fails its requests with REQUEST_TIMED_OUT but stays
// in flight until it applies, raft drops it or the term ends; requests
// waiting longer than WriteTimeout in the queue fail the same way (a
// heartbeat still refreshes its broker's session, as Kafka's expired
// heartbeats do). So no
// batch is ever built without a write that may still commit: late commits
// are harmless and Image.Skipped stays 0 (only an entry committed in
// another term than its tag, which disabled proposal forwarding rules out,
// is skipped, whole).
//
// Decisions (Kafka 4.2's, with its error codes and messages):
//   - brokers: registration (cluster id, DUPLICATE_BROKER_REGISTRATION
//     while another incarnation's session is valid unless it is in
//     controlled shutdown, log dir checks, same incarnation = retry, a new
//     incarnation first leaves its ISRs, and also its ELRs when
//     PreviousBrokerEpoch is not the registered epoch), heartbeats
//     (calculateNextBrokerState: fence, unfence once caught up to its
//     registration, controlled shutdown, SHUTDOWN_NOW once it leads nothing
//     and every active broker has applied the entry that moved its
//     leaderships), session expiry (every expired broker in one batch, each
//     fence built on the previous), producer id blocks;
//   - partitions: AlterPartition (validated in Kafka's order, broker epochs
//     of v3, partition-epoch CAS), ElectLeaders, unclean elections every
//     unclean.leader.election.interval.ms where the topic allows them,
//     preferred-leader balancing every
//     leader.imbalance.check.interval.seconds, reassignments; every change
//     goes through election.Build with the topic's effective
//     min.insync.replicas and the ELR feature;
//   - topics and configs: CreateTopics (placement.Place), DeleteTopics,
//     CreatePartitions, IncrementalAlterConfigs and AlterConfigs for
//     topics and brokers; changing min.insync.replicas with ELR on clears
//     the ELRs it governs.
//
// Deliberate differences from Kafka: a same-incarnation registration retry
// writes nothing (Kafka rewrites the registration); leader balancing does
// not read leader.imbalance.per.broker.percentage (neither does Kafka's
// KRaft controller); a reverted reassignment that needs an unclean election
// elects an acceptable original replica and marks it RECOVERING (see
// cancelReassignment); broker features are not negotiated.
//
// Invariants. Only an active core proposes, and only in its term; at most
// one core is active per term (raft has one leader per term, and a core
// activates on its own Activation only). Every record is built against the
// image it will apply to. Broker epochs are entry indexes, so they grow
// with every registration. The randomized test in sim_test.go checks these
// and the partition invariants of the design note (ISR ⊆ replicas, leader ∈
// ISR and usable or none, ELR ⊆ replicas outside the ISR, one leader per
// leader epoch) over thousands of schedules.
//
// Concurrency. A Core belongs to one goroutine. A Shell's Run is that
// goroutine; every other Shell method may be called from any goroutine, and
// Applied and LeadershipChanged never block (the raft loop calls them). Do
// waits for its reply or its context.
//
// # Single-node metadata
//
// Controller owns the cluster metadata of a single-node Gregor: topics
// (name, topic id, partition count, config overrides), the dynamic broker
// configs (cluster default and this node's own), and the cluster id.
//
// Until the broker runs on the metadata log, the image is kept in one JSON
// file, gregor-metadata.json, in the metadata dir package logdirs found
// (Bootstrap writes a new cluster's empty one when logdirs formats the
// dirs), rewritten atomically (temp file, fsync, rename, directory fsync) on
// every change before the change is acknowledged. Open refuses an image of
// another cluster or node.
//
// Every mutation is validated the way Kafka's controller validates it and
// fails with the Kafka error (kerr) a client expects: INVALID_TOPIC_EXCEPTION,
// TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR,
// INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION, ... — with Kafka's messages,
// and in Kafka's order, so a request with several problems gets the error
// Kafka would give (validate.go holds the checks both controllers make).
// Topics named like Kafka's internal topics (__consumer_offsets,
// __transaction_state, __share_group_state) are internal whoever creates
// them, as in Kafka.
//
// Concurrency: mutations are serialised by mu; readers load the current
// immutable *Image atomically. A mutation changes a clone and indexes it
// (topics by id, for the requests that name topics by id) just before it is
// published. Listeners registered with OnChange are called
// synchronously, in order, after each change is durable, while mu is held, so
// they see changes one at a time and must not call back into mutations.
package controller
