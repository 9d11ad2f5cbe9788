// Package config is the one registry of every broker and topic config Gregor
// knows: Kafka's property names, types, defaults and validators (Kafka 4.2),
// Gregor's own settings under "gregor.", and the rules that turn layers of
// settings into effective values and DescribeConfigs answers.
//
// # Registry
//
// BrokerDefs and TopicDefs list the configs in name order. A Def's Type is
// numbered as DescribeConfigs' ConfigType; a broker Def is ReadOnly when
// Kafka cannot change it at runtime, and PerBroker when Kafka changes it only
// for one broker. Gregor-only settings:
//
//	gregor.ack.fsync     true   acks=all and acks=1 produce requests are answered only after fsync
//	gregor.admin.listen  127.0.0.1:9644  address of the admin HTTP server
//	gregor.admin.tls.certificate, gregor.admin.tls.key  PEM files: serve HTTPS
//	gregor.admin.auth    none  none, basic (gregor.admin.auth.users, user:bcrypt-hash)
//	                           or bearer (gregor.admin.auth.tokens); /livez, /readyz stay open
//	gregor.admin.record.browser.enable  false  serve record contents (JSON API, console)
//	gregor.admin.pprof.enable  false  serve /debug/pprof/
//	gregor.admin.metrics.listen  ""  a second address with only /metrics, /livez, /readyz
//	gregor.log.dir.min.free.bytes  -1  free space each log dir keeps: produce that would leave
//	                                   less is refused (KAFKA_STORAGE_ERROR, retriable), and a
//	                                   follower does not append; -1 is min(256 MiB, 1% of the
//	                                   volume), 0 none (dynamic)
//	gregor.metrics.partition.series.enable  false  per-partition series on /metrics (dynamic)
//	gregor.max.in.flight.requests.per.connection  5  requests of a connection handled while
//	                                   earlier ones wait for their answer (pipelining)
//	gregor.max.in.flight.bytes.per.connection  67108864  unanswered request bytes past which a
//	                                   connection reads no further request
//
// # Layers and precedence
//
// A Broker holds, as Kafka does, static configs (server.properties read by
// LoadProperties, plus command-line overrides) and two dynamic layers set by
// AlterConfigs: the cluster default (resource "") and this broker's own. A
// broker config's value comes from the per-broker layer, else the cluster
// layer, else the static layer, else its default. A topic config comes from
// the topic's override, else from the first of its broker synonyms that has a
// value (Kafka's ServerTopicConfigSynonyms order, e.g. log.retention.ms, then
// log.retention.minutes, then log.retention.hours, converted to ms), else
// from the topic default. ResolveTopic does this and returns the typed Topic
// the storage engine uses.
//
// # Validation
//
// Every value is checked on the way in (NewBroker, WithDynamic,
// WithDynamicPerBroker, ValidateTopicOverrides, ResolveTopic,
// ApplyIncremental) with Kafka's validators and Kafka's wording. Errors wrap
// ErrInvalidConfig (→ INVALID_CONFIG) or, for malformed requests,
// ErrInvalidRequest (→ INVALID_REQUEST); their text is what Kafka would put
// in the response's error message. Unknown broker names are kept and
// reported (Kafka logs and ignores them); unknown topic names are refused.
//
// # Faithful quirks and deliberate differences
//
//   - DescribeTopic follows Kafka's ConfigHelper exactly, including its
//     dropping of broker synonyms that precede the topic's first synonym: a
//     retention set only by log.retention.hours is reported with source
//     DEFAULT_CONFIG and no synonyms, although its value is right.
//   - APPEND to an unset list starts from the registry default, as Kafka's
//     controller does (it cannot see broker overrides either).
//   - Removed in Kafka 4.0 and unknown here: message.format.version,
//     message.timestamp.difference.max.ms, message.downconversion.enable.
//   - remote.storage.enable=true is refused as Kafka refuses it on a broker
//     without tiered storage; Gregor has none.
//   - Security fails closed: IsSecurityConfig names every authentication,
//     authorization and TLS setting (ssl.*, sasl.*, authorizer.*,
//     super.users, allow.everyone.if.no.acl.found, principal.builder.class,
//     …, with or without a listener.name.NAME. prefix), and
//     IsHonouredSecurityConfig the ones Gregor implements (package auth:
//     PEM TLS, SASL PLAIN/SCRAM/OAUTHBEARER, ACLs). Broker.CheckServable
//     reports any other that is set, so the broker refuses to start rather
//     than ignore it; values Gregor cannot honour (a JKS key store, GSSAPI)
//     are refused when package auth builds the listeners. Dynamically,
//     only a listener's key and trust stores may change (per broker, with
//     the listener prefix, as Kafka reconfigures them); every other
//     security setting is refused with INVALID_CONFIG. Defaults never count.
//   - internal.segment.bytes (Kafka's test-only segment size) must be ≥ 1.
//   - Security configs that Kafka only takes with a listener prefix
//     (sasl.jaas.config), quotas, metrics reporters, tiered storage and the
//     new group protocols are not in the registry; their names load as
//     unknown configs.
//   - Properties files are read as UTF-8 (Java uses ISO-8859-1); ${…} is
//     never expanded.
//
// # Concurrency
//
// Everything here is immutable after construction: a *Broker, the Def
// registries and Topic values may be used from any goroutine. Changing a
// layer returns a new *Broker; publishing it (e.g. through an atomic.Pointer)
// is the caller's job. The package does no I/O except LoadProperties.
package config
