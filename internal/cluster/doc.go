// Package cluster is a node's membership in a Gregor cluster: where it sits
// (Layout, from Kafka's KRaft configs), its member of the metadata quorum
// with the controller that rides on it (Node), and its broker's side of
// Kafka's broker lifecycle (Lifecycle). Every node is combined: a broker
// and a voter (design §5.8.9).
//
// # Pieces
//
//   - Layout: node.id, controller.quorum.voters (static id@host:port; none
//     means this node alone), the CONTROLLER listener it binds (its entry in
//     listeners, else its voter address, else a free loopback port for a
//     one-node cluster) and the client listeners it serves and advertises,
//     each with its security protocol (all registered, with Kafka's
//     protocol ids), and the CONTROLLER listener's protocol (PLAINTEXT or
//     SSL). Dedicated brokers or controllers, dynamic quorums and SASL on
//     the CONTROLLER listener are refused with what to change. controller.quorum.election.timeout.ms sets raft's timing
//     (quorum.TimingFromKafka); controller.quorum.fetch.timeout.ms is
//     accepted but has no knob of its own in etcd raft, whose randomised
//     election timeout plays its part.
//   - Format and DeriveClusterID: a new cluster's metadata log, the
//     bootstrap snapshot (cluster id, eligible leader replicas on) with the
//     voters. Without `gregor storage format -t`, a cluster started with
//     explicit voters is named after them (a hash of the sorted id@address
//     list): every fresh voter formats itself into the same cluster, byte
//     for byte, with no step that hands an id around; clusters on other
//     addresses get other ids, which the raft transport refuses. A one-node
//     cluster without voters gets a random id.
//   - Upgrade: a single-node Gregor's gregor-metadata.json becomes the first
//     snapshot (topics with their ids, one replica each led by this node,
//     configs, the producer id block, this node registered fenced at epoch
//     1), then the file is renamed gregor-metadata.json.migrated.
//   - Node: quorum.Node and its TCP transport on the CONTROLLER listener,
//     the state machine that applies each committed entry to the metadata
//     image (metadata.Apply) and hands it to the controller.Shell (active
//     while this node leads raft) and to the publisher, and the publisher
//     that gives the broker (a Listener) the images in log order.
//   - Lifecycle: registration (a new incarnation, PreviousBrokerEpoch from
//     the epoch file), heartbeats every broker.heartbeat.interval.ms asking
//     to stay fenced until the broker is ready, controlled shutdown.
//   - EpochFile: the broker epoch carried from one run to the next (see its
//     documentation for when an epoch may be presented after a crash).
//
// # Invariants
//
//   - Nothing is published before StartPublishing: a node rebuilds its image
//     from the snapshot and the log with no effect on the broker, and its
//     first publish is the whole image it has once caught up (ReadIndex,
//     then WaitApplied: never the commit index heartbeats carry). After it,
//     every applied entry is published once, in order, as a delta (a
//     snapshot installed from the leader as a whole image).
//   - WaitPublished(i) returns only once an image holding every entry up to
//     raft index i is published: what a broker waits for before it answers a
//     request it forwarded to the controller.
//   - The state machine never blocks the raft loop: the controller and the
//     publisher queue what it hands them.
//   - A node opens only a metadata log formatted for its cluster id and the
//     voters it is configured with (raft's membership cannot change yet).
//
// # On-disk format (in the metadata log dir)
//
//   - __cluster_metadata-0/: the metadata log (package quorum: raft-meta,
//     wal/, snap/), and peer-directories (package quorum/transport);
//   - gregor-broker-epoch: version=1, broker.epoch, reason (EpochFile);
//   - gregor-metadata.json.migrated: an older Gregor's metadata, converted.
//
// # Goroutines
//
// A Node runs the raft loop (package quorum, which calls the state machine),
// the shell's goroutine, one that tells the shell of raft leadership
// changes, the publisher's (from StartPublishing) and the transport's. A
// Lifecycle runs one goroutine from Start to Stop. Node and Lifecycle
// methods are safe for concurrent use.
package cluster
