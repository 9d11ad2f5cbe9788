// Package broker is the composition root: it builds every subsystem of a
// Gregor node (a broker and a metadata quorum voter, Kafka's combined mode)
// from the broker configuration and starts and stops them in order.
//
// Security (security.go): each client listener gets an auth.Listener (TLS,
// SASL) from the configuration, hooked into its server; the CONTROLLER
// listener's (PLAINTEXT or SSL) wraps its net.Listener so that every
// connection from a peer, raft or Kafka RPC, is admitted by its principal
// (CLUSTER_ACTION with an authorizer; super users before the ACLs are
// loaded), and this node dials its peers with the same protocol, its key
// store as client certificate; the authorizer (authorizer.class.name =
// Kafka's StandardAuthorizer) is rebuilt from the published image whenever
// the ACLs change; SCRAM credentials are read from the node's applied
// image; key stores reload on broker config changes; the admin HTTP
// listener gets its TLS and authentication. New and Start refuse any
// security setting Gregor does not implement (config.CheckServable, SASL on
// the CONTROLLER listener, an unknown authorizer class, a listener without
// the stores or JAAS users it needs), so an operator who asked for
// protection never gets an open broker.
//
// Start (returns once the listeners are bound; the rest needs the quorum):
// configuration and the node's place in the cluster (cluster.ParseLayout) →
// log dirs (package logdirs: lock .lock in every dir for the process's life,
// check every meta.properties agrees and find the metadata log; format them
// when all are empty, the cluster named after its voters when they are
// listed; an older Gregor's gregor-metadata.json is converted into the
// metadata log, cluster.Upgrade) → admin HTTP listener (/readyz conditions
// "metadata", "log recovery", "broker registration") → the CONTROLLER
// listener, shared by the raft transport and the controller's Kafka RPCs
// (api.ControllerHandler), and the metadata log (cluster.Node: the image is
// rebuilt from the snapshot and the log, nothing published yet) →
// internal topics check (internaltopics.go: an internal topic the metadata
// does not hold yet must be creatable and writable as its broker configs
// describe it, offsets.topic.* and transaction.state.log.*, or the start
// stops naming them) → the client listeners, each with its security
// (queued.max.request.bytes bounds the request bytes they hold), bound, not
// served → the broker lifecycle (registration
// with PreviousBrokerEpoch from the epoch file, then heartbeats, fenced).
//
// Startup, in the background (design §5.8.7): catch up with the metadata log
// (ReadIndex, then WaitApplied; a quorum of voters must run) → dynamic
// broker configs from that image → log manager (loads and recovers every
// partition log; a log the image does not give this broker — no such topic
// or partition, another topic id, this broker not a replica — is renamed
// stray and kept, Kafka's isStrayKraftReplica) → replica manager, group
// coordinator, the authorizer over the ACLs caught up with, transaction
// coordinator (markers written through api.MarkerWriter: the
// WriteTxnMarkers path to a local leader, a WriteTxnMarkers request to
// another broker's), request handler → the first publish (the whole image:
// partitions hosted in their roles, coordinators of the __consumer_offsets
// and __transaction_state partitions led here loaded) → the log manager's
// jobs, the log cleaner and the orphan aborter (txn.OrphanAborter over the
// partitions led here, writing through the coordinator's MarkerWriter;
// acting only with gregor.transaction.orphan.abort.enable). Both it and the
// admin source classify holders through txnViews (txnviews.go): this
// broker's coordinator, then, for a producer id it does not know, the other
// brokers' coordinators over the inter-broker listener (ListTransactions
// filtered by producer id, DescribeTransactions; with an authorizer an
// empty answer is unknown, not orphan); the console's list of ongoing
// transactions asks every coordinator the same way
// → the admin JSON API, web console and metrics are registered → heartbeats
// ask to be unfenced → once the controller has unfenced the broker and the
// entry that did is published here, Ready is closed and Run serves clients.
// The startup goroutine then keeps the "metadata" readiness condition
// current (metaready.go): every second a ReadIndex to the quorum leader and
// a wait until that index is published; not ready only after
// broker.session.timeout.ms without such a confirmation, with why (no
// leader, or how far behind).
//
// The cluster view (quorumview.go): /v1/cluster's quorum is this node's
// raft state and the leader's DescribeQuorum answer, asked through the
// controller router and bounded by a timeout. InitProducerId waits at most
// 2 s for a block of producer ids from the controller (REQUEST_TIMED_OUT,
// retriable, without one).
//
// Publish (cluster.Listener) follows every later image in log order: dynamic
// broker configs, topics removed (their partitions dropped, logs deleted),
// partitions created or changed (hosted with the image's leader, leader
// epoch and partition epoch; dropped when this broker is no longer a
// replica), topic configs re-resolved, and the group and transaction
// coordinators loading a __consumer_offsets or __transaction_state
// partition when this broker becomes its leader and unloading it when it
// stops being it.
//
// The controller: the node that leads raft is the active controller
// (controller.Shell). This broker reaches it through api.ControllerRouter:
// in process when it is local (unless Options.ControllerOverTCP), else
// over the leader's CONTROLLER listener (package kclient), again on
// NOT_CONTROLLER or a connection error. Admin requests from clients are
// forwarded there and answered once this broker has published their effect.
// Producer ids come in blocks from the controller (AllocateProducerIds).
//
// Other brokers: followers fetch from their leaders (and any other
// broker-to-broker request goes) over a second kclient pool on the
// inter-broker listener each peer registered (cluster.Layout.InterBroker:
// inter.broker.listener.name, else security.inter.broker.protocol's
// listener), dialled with that listener's TLS (this broker's key store as
// client certificate) and SASL (sasl.mechanism.inter.broker.protocol with
// its own JAAS username/password); the leader authorizes what it sends as
// that principal (CLUSTER_ACTION; usually a super user). See
// interbroker.go.
//
// Shutdown (SIGTERM/SIGINT in gregor serve): a controlled shutdown first (the
// controller moves this broker's leaderships away; bounded by
// broker.session.timeout.ms), then the orphan aborter and the transaction coordinator (its marker
// senders stop; a decided transaction is completed by the next load) and
// the group coordinator (parked JoinGroup/SyncGroup requests are answered
// NOT_COORDINATOR), the client
// listener (in-flight requests finish), the admin listener and the log
// cleaner stop; the log manager flushes every log, writes the checkpoints
// and the clean-shutdown marker; the broker epoch is written for the next
// start (cluster.EpochFile); the lifecycle, the controller listener and the
// metadata log stop; last the log dirs' locks are released.
//
// Source() is the admin.Source the JSON API and the web console read: the
// read model in internal/admin/source, built over the published metadata,
// replica manager, log manager, cleaner and group coordinator.
//
// Metrics (metrics.go): /metrics carries, besides the listener's request and
// socket counters (package server), the replica manager's BrokerTopicMetrics
// counters and log flush histogram (package replica), the cleaner's gauges
// (package cleaner), and gauges computed at scrape time from the hosted
// partitions, the published metadata image and the group coordinator. Names
// follow the Prometheus JMX exporter's names for Kafka's MBeans;
// docs/metrics.md lists every series with its MBean, and a test keeps that
// list equal to what is exposed. Per-partition series appear while the
// dynamic broker config gregor.metrics.partition.series.enable is true (read
// at each scrape).
//
// Log dir health (onLogDirChange, told by the log manager): each log dir is
// a readiness condition named "log dir <path>": ready; ready with a warning
// while it is full (gregor.log.dir.min.free.bytes, read at each free-space
// check: produce is refused and followers do not append, fetches are
// served, and a load balancer should not act); not ready once offline. When the last dir goes offline the
// broker stops by itself: Run shuts down as on a signal and returns the
// error, and gregor serve exits non-zero with it (Kafka halts then).
package broker
