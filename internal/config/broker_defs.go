package config

// Broker configs: Kafka 4.2 names, types, defaults, validators and update
// modes (read-only unless marked dynamic or perBroker), plus Gregor's own
// settings under "gregor.". Security settings that Kafka only accepts
// listener-prefixed, quotas, metrics reporters, tiered storage and the new
// group protocols are not listed; such names load as unknown configs.

const (
	maxLong = "9223372036854775807"
	maxInt  = "2147483647"
)

func broker(name string, t Type, dflt, doc string, opts ...option) Def {
	return mkDef(name, t, dflt, doc, true, opts)
}

var brokerReg = newRegistry(concat(
	nodeDefs(), listenerDefs(), logDefs(), cleanerDefs(), topicDefaultDefs(),
	networkDefs(), replicationDefs(), groupDefs(), txnDefs(), securityDefs(), gregorDefs(),
))

func concat(lists ...[]Def) []Def {
	var out []Def
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func nodeDefs() []Def {
	return []Def{
		broker("node.id", Int, "", "Id of this node in the cluster. Required.", required, atLeast(0)),
		broker("broker.id", Int, "-1", "Legacy name of node.id; if both are set they must agree."),
		broker("process.roles", List, "", "Roles this process plays: broker, controller, or both. Required.", required, listOf(false, "broker", "controller")),
		broker("controller.quorum.voters", List, "", "Static controller quorum as {id}@{host}:{port} entries.", quorumVoters()),
		broker("controller.quorum.bootstrap.servers", List, "", "Controller endpoints ({host}:{port}) used to discover the quorum.", hostPortList()),
		broker("controller.quorum.election.timeout.ms", Int, "1000", "How long a voter waits without hearing from the leader before calling an election.", atLeast(0)),
		broker("controller.quorum.fetch.timeout.ms", Int, "2000", "How long without a successful fetch before a voter becomes a candidate.", atLeast(0)),
		broker("controller.quorum.request.timeout.ms", Int, "2000", "Timeout of requests between quorum members.", atLeast(0)),
		broker("metadata.log.dir", String, "", "Directory of the metadata log; the first log directory when unset.", null),
		broker("broker.rack", String, "", "Rack of this broker, used for rack-aware replica placement.", null),
		broker("broker.heartbeat.interval.ms", Int, "2000", "Interval between broker heartbeats to the controller."),
		broker("broker.session.timeout.ms", Int, "9000", "How long a broker stays registered without heartbeats."),
		broker("initial.broker.registration.timeout.ms", Int, "60000", "How long a starting broker waits to register before giving up."),
	}
}

func listenerDefs() []Def {
	return []Def{
		broker("listeners", List, "PLAINTEXT://:9092", "Addresses to listen on, as LISTENER_NAME://host:port entries.", perBroker, endpointList()),
		broker("advertised.listeners", List, "", "Addresses given to clients; the listeners when unset.", null, endpointList()),
		broker("listener.security.protocol.map", String, "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
			"Security protocol of each listener name, as NAME:PROTOCOL entries.", perBroker, protocolMap()),
		broker("controller.listener.names", List, "", "Names of the listeners the controller uses. Required.", required, listOf(false)),
		broker("inter.broker.listener.name", String, "", "Listener used between brokers.", null),
		broker("security.inter.broker.protocol", String, "PLAINTEXT", "Protocol between brokers when inter.broker.listener.name is unset.",
			oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
		broker("early.start.listeners", List, "", "Listeners started before the authorizer is ready.", null),
	}
}

func logDefs() []Def {
	return []Def{
		broker("log.dir", List, "/tmp/kafka-logs", "Log directory, used when log.dirs is unset.", listOf(false)),
		broker("log.dirs", List, "", "Directories holding partition logs.", null, listOf(false)),
		broker("log.segment.bytes", Int, "1073741824", "Largest size of one log segment file.", dynamic, atLeast(1048576)),
		broker("log.roll.ms", Long, "", "Time after which a segment is rolled; log.roll.hours when unset.", dynamic, null),
		broker("log.roll.hours", Int, "168", "Segment roll time in hours, used when log.roll.ms is unset.", atLeast(1)),
		broker("log.roll.jitter.ms", Long, "", "Largest random jitter subtracted from the roll time; log.roll.jitter.hours when unset.", dynamic, null),
		broker("log.roll.jitter.hours", Int, "0", "Roll jitter in hours, used when log.roll.jitter.ms is unset.", atLeast(0)),
		broker("log.retention.ms", Long, "", "Time a log is kept before old segments are deleted; -1 keeps forever.", dynamic, null),
		broker("log.retention.minutes", Int, "", "Retention in minutes, used when log.retention.ms is unset.", null),
		broker("log.retention.hours", Int, "168", "Retention in hours, used when log.retention.ms and .minutes are unset."),
		broker("log.retention.bytes", Long, "-1", "Largest size of a partition log before old segments are deleted; -1 means no limit.", dynamic),
		broker("log.retention.check.interval.ms", Long, "300000", "How often logs are checked for segments to delete.", atLeast(1)),
		broker("log.index.size.max.bytes", Int, "10485760", "Largest size of an offset index file.", dynamic, atLeast(4)),
		broker("log.index.interval.bytes", Int, "4096", "Bytes of log between two offset index entries.", dynamic, atLeast(0)),
		broker("log.flush.interval.messages", Long, maxLong, "Messages appended to a partition before it is fsynced.", dynamic, atLeast(1)),
		broker("log.flush.interval.ms", Long, "", "Longest time appended data stays unflushed; log.flush.scheduler.interval.ms when unset.", dynamic, null),
		broker("log.flush.scheduler.interval.ms", Long, maxLong, "How often the flusher checks whether a log needs an fsync."),
		broker("log.flush.offset.checkpoint.interval.ms", Int, "60000", "How often the recovery point checkpoint is written.", atLeast(0)),
		broker("log.flush.start.offset.checkpoint.interval.ms", Int, "60000", "How often the log start offset checkpoint is written.", atLeast(0)),
		broker("log.segment.delete.delay.ms", Long, "60000", "Time a deleted segment's files linger before removal.", dynamic, atLeast(0)),
		broker("log.cleanup.policy", List, "delete", "Default cleanup policy: delete, compact, both, or none (empty).", dynamic, listOf(true, "compact", "delete")),
		broker("log.message.timestamp.type", String, "CreateTime", "Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime).",
			dynamic, oneOf("CreateTime", "LogAppendTime")),
		broker("log.message.timestamp.before.max.ms", Long, maxLong, "How far in the past a CreateTime timestamp may be.", dynamic, atLeast(0)),
		broker("log.message.timestamp.after.max.ms", Long, "3600000", "How far in the future a CreateTime timestamp may be.", dynamic, atLeast(0)),
		broker("log.preallocate", Boolean, "false", "Preallocate segment files when they are created.", dynamic),
		broker("log.local.retention.ms", Long, "-2", "Local retention time for tiered topics; -2 means log.retention.ms.", dynamic, atLeast(-2)),
		broker("log.local.retention.bytes", Long, "-2", "Local retention size for tiered topics; -2 means log.retention.bytes.", dynamic, atLeast(-2)),
		broker("num.recovery.threads.per.data.dir", Int, "2", "Threads per log directory for recovery at start and flushing at shutdown.", dynamic, atLeast(1)),
	}
}

func cleanerDefs() []Def {
	return []Def{
		broker("log.cleaner.enable", Boolean, "true", "Run the log cleaner (deprecated in Kafka; keep it true)."),
		broker("log.cleaner.threads", Int, "1", "Number of log cleaner threads.", dynamic, atLeast(0)),
		broker("log.cleaner.dedupe.buffer.size", Long, "134217728", "Memory for the cleaners' key-hash → offset maps, across all threads.", dynamic),
		broker("log.cleaner.io.buffer.size", Int, "524288", "Memory for cleaner read and write buffers, across all threads.", dynamic, atLeast(0)),
		broker("log.cleaner.io.buffer.load.factor", Double, "0.9", "How full a cleaner offset map may get.", dynamic),
		broker("log.cleaner.io.max.bytes.per.second", Double, "1.7976931348623157E308", "Throttle on cleaner read plus write I/O.", dynamic),
		broker("log.cleaner.backoff.ms", Long, "15000", "Sleep when no log needs cleaning.", dynamic, atLeast(0)),
		broker("log.cleaner.min.cleanable.ratio", Double, "0.5", "Dirty/total ratio above which a log is cleaned.", dynamic, betweenFloat(0, 1)),
		broker("log.cleaner.delete.retention.ms", Long, "86400000", "How long tombstones survive after the cleaner first passes them.", dynamic, atLeast(0)),
		broker("log.cleaner.min.compaction.lag.ms", Long, "0", "Shortest time a record stays uncompacted.", dynamic, atLeast(0)),
		broker("log.cleaner.max.compaction.lag.ms", Long, maxLong, "Longest time a record may stay ineligible for compaction.", dynamic, atLeast(1)),
	}
}

// topicDefaultDefs are broker configs that are also topic defaults under the same or another name.
func topicDefaultDefs() []Def {
	return []Def{
		broker("message.max.bytes", Int, "1048588", "Largest record batch accepted (after compression).", dynamic, atLeast(0)),
		broker("num.partitions", Int, "1", "Partitions of a topic created without a count.", atLeast(1)),
		broker("default.replication.factor", Int, "1", "Replication factor of a topic created without one."),
		broker("min.insync.replicas", Int, "1", "In-sync replicas needed for an acks=all write.", dynamic, atLeast(1)),
		broker("auto.create.topics.enable", Boolean, "true", "Create unknown topics when clients ask for them."),
		broker("delete.topic.enable", Boolean, "true", "Allow topics to be deleted."),
		broker("unclean.leader.election.enable", Boolean, "false", "Allow an out-of-sync replica to become leader, losing data.", dynamic),
		broker("compression.type", String, "producer", "Compression of stored batches; producer keeps the producer's codec.",
			dynamic, oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
		broker("compression.gzip.level", Int, "-1", "gzip level when compression.type is gzip.", dynamic, gzipLevel()),
		broker("compression.lz4.level", Int, "9", "lz4 level when compression.type is lz4.", dynamic, between(1, 17)),
		broker("compression.zstd.level", Int, "3", "zstd level when compression.type is zstd.", dynamic, between(-131072, 22)),
	}
}

func networkDefs() []Def {
	return []Def{
		broker("socket.request.max.bytes", Int, "104857600", "Largest request frame accepted.", atLeast(1)),
		broker("socket.send.buffer.bytes", Int, "102400", "Kafka's SO_SNDBUF of client sockets; accepted, not applied: Gregor leaves the buffer to the OS's autotuning (Kafka's -1)."),
		broker("socket.receive.buffer.bytes", Int, "102400", "Kafka's SO_RCVBUF of client sockets; accepted, not applied: Gregor leaves the buffer to the OS's autotuning (Kafka's -1)."),
		broker("socket.listen.backlog.size", Int, "50", "Pending-connection backlog of each listener.", atLeast(1)),
		broker("max.connections", Int, maxInt, "Most connections the broker accepts.", dynamic, atLeast(0)),
		broker("max.connections.per.ip", Int, maxInt, "Most connections from one IP address.", dynamic, atLeast(0)),
		broker("max.connections.per.ip.overrides", String, "", "Per-IP or per-host connection limits, as host:count entries.", dynamic),
		broker("max.connection.creation.rate", Int, maxInt, "Most new connections per second.", dynamic, atLeast(0)),
		broker("connections.max.idle.ms", Long, "600000", "Idle time after which a connection is closed."),
		broker("num.network.threads", Int, "3", "Threads receiving requests and sending responses.", dynamic, atLeast(1)),
		broker("num.io.threads", Int, "8", "Threads processing requests.", dynamic, atLeast(1)),
		broker("background.threads", Int, "10", "Threads for background tasks.", dynamic, atLeast(1)),
		broker("queued.max.requests", Int, "500", "Requests queued before the network threads stop reading.", atLeast(1)),
		// Kafka's default is -1 (no limit). Gregor bounds request memory by
		// default: a frame takes memory only as its bytes arrive, so this
		// limits what clients actually send at once, and one request of
		// up to socket.request.max.bytes still proceeds when it alone is
		// larger (server.MemoryPool).
		broker("queued.max.request.bytes", Long, "134217728",
			"Bytes of requests held at once, broker-wide, before connections stop reading; -1 (Kafka's default) means no limit."),
		broker("request.timeout.ms", Int, "30000", "Timeout of the broker's own requests to other nodes."),
		broker("max.request.partition.size.limit", Int, "2000", "Most partitions served in one request.", atLeast(1)),
		broker("fetch.max.bytes", Int, "57671680", "Most bytes returned by one fetch.", atLeast(1024)),
		broker("max.incremental.fetch.session.cache.slots", Int, "1000", "Most incremental fetch sessions kept.", atLeast(0)),
	}
}

func replicationDefs() []Def {
	return []Def{
		// Kafka's default is 1 MiB. A Gregor follower fsyncs each fetch's
		// records before it fetches again (gregor.ack.fsync), so one fetch
		// is one fsync and its bytes per partition bound how fast a follower
		// replicates: at 1 MiB, one full batch per fsync.
		broker("replica.fetch.max.bytes", Int, "10485760",
			"Bytes a follower asks for per partition; Gregor's default, 10 MiB, is what replica.fetch.response.max.bytes lets one fetch carry (Kafka's is 1 MiB): a follower fsyncs each fetch.",
			atLeast(0)),
		broker("replica.fetch.response.max.bytes", Int, "10485760", "Bytes a follower asks for per fetch.", atLeast(0)),
		broker("replica.fetch.min.bytes", Int, "1", "Bytes a follower fetch waits for."),
		broker("replica.fetch.wait.max.ms", Int, "500", "Longest wait of a follower fetch; at most replica.lag.time.max.ms."),
		broker("replica.fetch.backoff.ms", Int, "1000", "Sleep after a follower fetch error.", atLeast(0)),
		broker("replica.lag.time.max.ms", Long, "30000", "Time after which a follower that has not caught up leaves the ISR."),
		broker("replica.socket.timeout.ms", Int, "30000", "Socket timeout of follower fetches; at least replica.fetch.wait.max.ms."),
		broker("replica.socket.receive.buffer.bytes", Int, "65536", "Kafka's SO_RCVBUF of follower fetch connections; accepted, not applied: Gregor leaves the buffer to the OS's autotuning (Kafka's -1)."),
		broker("replica.high.watermark.checkpoint.interval.ms", Long, "5000", "How often the high watermark checkpoint is written."),
		broker("num.replica.fetchers", Int, "1", "Fetcher threads per source broker.", dynamic),
		broker("auto.leader.rebalance.enable", Boolean, "true", "Move leadership back to preferred replicas."),
		broker("leader.imbalance.check.interval.seconds", Long, "300", "How often leadership balance is checked.", atLeast(1)),
		broker("leader.imbalance.per.broker.percentage", Int, "10", "Leader imbalance a broker may have; like Kafka's KRaft controller, Gregor's ignores it and balances any imbalance."),
		broker("unclean.leader.election.interval.ms", Long, "300000", "How often the controller elects leaders uncleanly for leaderless partitions of topics that allow it.", atLeast(1), internal),
	}
}

func groupDefs() []Def {
	return []Def{
		broker("group.initial.rebalance.delay.ms", Int, "3000", "Wait for more members before the first rebalance of a new group."),
		broker("group.min.session.timeout.ms", Int, "6000", "Shortest session timeout a member may ask for."),
		broker("group.max.session.timeout.ms", Int, "1800000", "Longest session timeout a member may ask for."),
		broker("group.max.size", Int, maxInt, "Most members of one classic group.", atLeast(1)),
		broker("offsets.topic.num.partitions", Int, "50", "Partitions of __consumer_offsets.", atLeast(1)),
		broker("offsets.topic.replication.factor", Short, "3", "Replication factor of __consumer_offsets.", atLeast(1)),
		broker("offsets.topic.segment.bytes", Int, "104857600", "Segment size of __consumer_offsets.", atLeast(1)),
		broker("offsets.topic.compression.codec", Int, "0", "Compression codec id for __consumer_offsets writes."),
		broker("offsets.retention.minutes", Int, "10080", "How long committed offsets of an empty group are kept.", atLeast(1)),
		broker("offsets.retention.check.interval.ms", Long, "600000", "How often expired offsets are looked for.", atLeast(1)),
		broker("offsets.commit.timeout.ms", Int, "5000", "Longest wait for a coordinator write to replicate.", atLeast(1)),
		broker("offsets.load.buffer.size", Int, "5242880", "Read batch size when loading __consumer_offsets.", atLeast(1)),
		broker("offset.metadata.max.bytes", Int, "4096", "Largest metadata string of an offset commit."),
	}
}

func txnDefs() []Def {
	return []Def{
		broker("transaction.max.timeout.ms", Int, "900000", "Longest transaction timeout a producer may ask for.", atLeast(1)),
		broker("transaction.state.log.num.partitions", Int, "50", "Partitions of __transaction_state.", atLeast(1)),
		broker("transaction.state.log.replication.factor", Short, "3", "Replication factor of __transaction_state.", atLeast(1)),
		broker("transaction.state.log.min.isr", Int, "2", "min.insync.replicas of __transaction_state.", atLeast(1)),
		broker("transaction.state.log.segment.bytes", Int, "104857600", "Segment size of __transaction_state.", atLeast(1)),
		broker("transaction.state.log.load.buffer.size", Int, "5242880", "Read batch size when loading __transaction_state.", atLeast(1)),
		broker("transactional.id.expiration.ms", Int, "604800000", "Idle time after which a transactional id expires.", atLeast(1)),
		broker("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, "10000", "How often timed-out transactions are aborted.", atLeast(1)),
		broker("transaction.remove.expired.transaction.cleanup.interval.ms", Int, "3600000", "How often expired transactional ids are removed.", atLeast(1)),
		broker("transaction.partition.verification.enable", Boolean, "true", "Check a partition was added to the transaction before a transactional write.", dynamic),
		broker("producer.id.expiration.ms", Int, "86400000", "Idle time after which a partition forgets a producer id.", dynamic, atLeast(1)),
		broker("producer.id.expiration.check.interval.ms", Int, "600000", "How often partitions look for expired producer ids.", atLeast(1), internal),
	}
}

func securityDefs() []Def {
	return []Def{
		broker("ssl.keystore.type", String, "JKS", "Key store format; Gregor reads PEM only.", perBroker),
		broker("ssl.keystore.location", String, "", "Key store file: the PEM private key and certificate chain.", perBroker, null),
		broker("ssl.keystore.password", Password, "", "Key store password (not allowed for PEM).", perBroker, null),
		broker("ssl.key.password", Password, "", "Password of an encrypted PKCS#8 private key.", perBroker, null),
		broker("ssl.keystore.key", Password, "", "PEM private key given inline.", perBroker, null),
		broker("ssl.keystore.certificate.chain", Password, "", "PEM certificate chain given inline.", perBroker, null),
		broker("ssl.truststore.type", String, "JKS", "Trust store format; Gregor reads PEM only.", perBroker),
		broker("ssl.truststore.location", String, "", "Trust store file: PEM certificates trusted to sign client certificates.", perBroker, null),
		broker("ssl.truststore.password", Password, "", "Trust store password (not allowed for PEM).", perBroker, null),
		broker("ssl.truststore.certificates", Password, "", "PEM trusted certificates given inline.", perBroker, null),
		broker("ssl.client.auth", String, "none", "Client certificates: required, requested or none.", perBroker, oneOf("required", "requested", "none")),
		broker("ssl.enabled.protocols", List, "TLSv1.2,TLSv1.3", "TLS versions accepted (TLSv1.2 and TLSv1.3).", perBroker),
		broker("ssl.protocol", String, "TLSv1.3", "Highest TLS version used.", perBroker),
		broker("ssl.cipher.suites", List, "", "TLS 1.2 cipher suites allowed (IANA names); empty allows the defaults.", perBroker),
		broker("ssl.endpoint.identification.algorithm", String, "https", "Host name verification of peers; empty disables it.", perBroker),
		broker("ssl.principal.mapping.rules", String, "DEFAULT", "Rules mapping a client certificate's subject to a principal name.", perBroker),
		broker("ssl.allow.dn.changes", Boolean, "false", "Allow a reloaded key store's certificate a different subject.", perBroker),
		broker("ssl.allow.san.changes", Boolean, "false", "Allow a reloaded key store's certificate different subject alternative names.", perBroker),
		broker("sasl.enabled.mechanisms", List, "GSSAPI", "SASL mechanisms offered: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER.", perBroker),
		broker("sasl.mechanism.inter.broker.protocol", String, "GSSAPI", "SASL mechanism between brokers.", perBroker),
		broker("sasl.mechanism.controller.protocol", String, "GSSAPI", "SASL mechanism towards the controllers.", perBroker),
		broker("sasl.server.callback.handler.class", Class, "", "Server callback handler; for OAUTHBEARER, Kafka's OAuthBearerValidatorCallbackHandler.", perBroker, null),
		broker("sasl.oauthbearer.jwks.endpoint.url", String, "", "JSON Web Key Set (file: or https: URL) that verifies OAUTHBEARER tokens.", perBroker, null),
		broker("sasl.oauthbearer.jwks.endpoint.refresh.ms", Long, "3600000", "How often the key set is fetched again.", perBroker),
		broker("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Long, "100", "Least time between two fetches of the key set.", perBroker),
		broker("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Long, "10000", "Most time between retries of a failed fetch.", perBroker),
		broker("sasl.oauthbearer.expected.audience", List, "", "Audiences a token must name one of; empty checks none.", perBroker),
		broker("sasl.oauthbearer.expected.issuer", String, "", "Issuer a token must name; empty checks none.", perBroker, null),
		broker("sasl.oauthbearer.clock.skew.seconds", Int, "30", "Clock difference allowed when checking token times.", perBroker),
		broker("sasl.oauthbearer.sub.claim.name", String, "sub", "Claim holding the principal name.", perBroker),
		broker("sasl.oauthbearer.scope.claim.name", String, "scope", "Claim holding the scopes.", perBroker),
		broker("sasl.server.max.receive.size", Int, "524288", "The maximum receive size allowed before and during SASL authentication (and re-authentication): a larger request frame or SASL token closes the connection.", atLeast(1)),
		broker("connections.max.reauth.ms", Long, "0", "Longest SASL session before the client must re-authenticate (KIP-368); 0 is none.", perBroker),
		broker("connection.failed.authentication.delay.ms", Int, "100", "Delay before closing a connection whose authentication failed.", atLeast(0)),
		broker("authorizer.class.name", String, "", "Authorizer: Kafka's org.apache.kafka.metadata.authorizer.StandardAuthorizer; empty is none."),
		broker("super.users", String, "", "Principals allowed everything, separated by ';'.", null),
		broker("allow.everyone.if.no.acl.found", Boolean, "false", "Allow access to resources no ACL names."),
	}
}

func gregorDefs() []Def {
	return []Def{
		broker("gregor.ack.fsync", Boolean, "true",
			"Acknowledge acks=all and acks=1 produce requests only after the appended data is fsynced; false gives Kafka's page-cache behaviour.", dynamic),
		broker("gregor.admin.listen", String, "127.0.0.1:9644", "Address of the admin HTTP server (health, metrics, JSON API, console).", hostPortCheck()),
		broker("gregor.admin.tls.certificate", String, "", "PEM certificate chain the admin HTTP server serves HTTPS with (with gregor.admin.tls.key).", null),
		broker("gregor.admin.tls.key", String, "", "PEM private key of gregor.admin.tls.certificate.", null),
		broker("gregor.admin.auth", String, "none", "Authentication of the admin HTTP server (all but /livez and /readyz): none, basic or bearer.",
			oneOf("none", "basic", "bearer")),
		broker("gregor.admin.auth.users", Password, "", "Basic auth users, comma-separated user:bcrypt-hash (htpasswd -nbB).", null),
		broker("gregor.admin.auth.tokens", Password, "", "Bearer tokens accepted, comma-separated.", null),
		broker("gregor.admin.record.browser.enable", Boolean, "false", "Serve record contents: the JSON API's records and the console's message browser."),
		broker("gregor.admin.pprof.enable", Boolean, "false", "Serve Go's profiler at /debug/pprof/."),
		broker("gregor.admin.metrics.listen", String, "", "A second admin address serving only /metrics, /livez and /readyz, without authentication.", null),
		broker("gregor.log.dir.min.free.bytes", Long, "-1",
			"Free space to keep on each log dir's volume: a produce that would leave less is refused with KAFKA_STORAGE_ERROR "+
				"(clients retry) and a follower does not append its leader's records (it falls out of the ISR) until retention or "+
				"DeleteRecords frees space, and fetches are still served; -1 keeps "+
				"min(256 MiB, 1% of the volume), 0 keeps none.", dynamic, atLeast(-1)),
		broker("gregor.max.in.flight.requests.per.connection", Int, "5",
			"Requests of one connection read and handed on while earlier ones still wait for their answer (a produce for its fsync, a fetch for data); "+
				"answers are written in request order. 5 is Kafka clients' own maximum.", atLeast(1)),
		broker("gregor.max.in.flight.bytes.per.connection", Int, "67108864",
			"Bytes of one connection's unanswered requests past which it reads no further request (one request is always read).", atLeast(1)),
		broker("gregor.transaction.version", Short, "2",
			"The finalized level of Kafka's transaction.version feature that ApiVersions advertises: 2 is KIP-890 part 2 "+
				"(an epoch bump per transaction, implicit partition adds), 1 and 0 the original protocol. Kafka sets it with "+
				"kafka-features.sh; transactional clients pick their protocol from it.", between(0, 2)),
		broker("gregor.transaction.orphan.abort.enable", Boolean, "false",
			"Abort orphaned transactions automatically: a transaction holding a led partition's last stable offset that the "+
				"hanging-transaction detector has classified orphan (no coordinator will ever write its marker) at every check "+
				"for gregor.transaction.orphan.abort.min.orphan.ms and that is older than transaction.max.timeout.ms gets the "+
				"ABORT marker kafka-transactions.sh abort would write. Checked every "+
				"transaction.abort.timed.out.transaction.cleanup.interval.ms; each abort is logged and counted.", dynamic),
		broker("gregor.transaction.orphan.abort.min.orphan.ms", Long, "600000",
			"How long a transaction must have been classified orphan, without a break, before "+
				"gregor.transaction.orphan.abort.enable aborts it.", dynamic, atLeast(0)),
		broker("gregor.metrics.partition.series.enable", Boolean, "false",
			"Expose per-partition series (kafka_log_log_* with topic and partition labels) on /metrics; broker-wide totals are always exposed.", dynamic),
	}
}

// securityReconfigurable are the SSL configs Kafka lets you change at runtime
// only with a listener prefix (listener.name.NAME.ssl…).
var securityReconfigurable = map[string]bool{
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.password": true, "ssl.key.password": true,
	"ssl.keystore.key": true, "ssl.keystore.certificate.chain": true, "ssl.truststore.type": true,
	"ssl.truststore.location": true, "ssl.truststore.password": true, "ssl.truststore.certificates": true,
}

// BrokerDefs returns every broker config Gregor knows, in name order.
func BrokerDefs() []Def { return brokerReg.copies() }

// BrokerDef returns the broker config called name.
func BrokerDef(name string) (Def, bool) {
	d, ok := brokerReg.byName[name]
	if !ok {
		return Def{}, false
	}
	return d.clone(), true
}
