// Package controller is the active controller of a Gregor cluster: Core and
// Shell decide every change to the cluster metadata, which is a raft log of
// metadata records (package metadata): Kafka's QuorumController with
// ReplicationControlManager, ClusterControlManager and
// BrokerHeartbeatManager. Package cluster runs one Shell per node over the
// node's raft log; only the node that leads raft is active. names.go holds
// the names and limits the brokers' request handlers share with it (topic
// name rules, Kafka's internal topics).
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
//   - unclean and last-known-leader elections (any of the above that
//     elects from outside the ISR and ELR) write a metadata.UncleanElection
//     record in the same write, after the change: previous leader, ISR and
//     ELR, the time, and how many since the last acknowledgement; Gregor's
//     own AckUncleanElectionRequest (unclean.go; no Kafka API) clears the
//     one it names by leader epoch, never a newer one;
//   - features (features.go): UpdateFeatures finalizes
//     eligible.leader.replicas.version (0-1; a new cluster's bootstrap
//     finalizes 1), all updates or none as Kafka's FeatureControlManager;
//     disabling it clears every ELR and last known ELR;
//   - topics and configs: CreateTopics (placement.Place), DeleteTopics,
//     CreatePartitions, IncrementalAlterConfigs and AlterConfigs for
//     topics and brokers; changing min.insync.replicas with ELR on clears
//     the ELRs it governs;
//   - security (security.go): CreateAcls (the broker's and
//     AclControlManager's checks; an ACL that exists succeeds without a
//     record; ids from Config.NewTopicID), DeleteAcls (per filter, every
//     ACL matched, each removed once), AlterUserScramCredentials
//     (ScramControlManager: a user altered twice fails whole with
//     DUPLICATE_RESOURCE, 4096..16384 iterations, the stored key and
//     server key derived from the client's salted password, never the
//     password).
//
// Deliberate differences from Kafka: a same-incarnation registration retry
// writes nothing (Kafka rewrites the registration); leader balancing does
// not read leader.imbalance.per.broker.percentage (neither does Kafka's
// KRaft controller); a reverted reassignment that needs an unclean election
// elects an acceptable original replica and marks it RECOVERING (see
// cancelReassignment); broker features are not negotiated; the broker of
// the controller's own process (Config.LocalIncarnation) replaces its
// earlier incarnation at once when they share a log dir, since that dir's
// lock proves the earlier one gone (Kafka waits for its session to expire).
//
// Invariants. Only an active core proposes, and only in its term; at most
// one core is active per term (raft has one leader per term, and a core
// activates on its own Activation only). Every record is built against the
// image it will apply to. Broker epochs are entry indexes, so they grow
// with every registration. The randomized test in sim_test.go checks these
// and the partition invariants of the design note (ISR ⊆ replicas, leader ∈
// ISR and usable or none, ELR ⊆ replicas outside the ISR, one leader per
// leader epoch, a RECOVERING partition has its unclean election recorded)
// over thousands of schedules.
//
// Concurrency. A Core belongs to one goroutine. A Shell's Run is that
// goroutine; every other Shell method may be called from any goroutine, and
// Applied and LeadershipChanged never block (the raft loop calls them). Do
// waits for its reply or its context.
package controller
