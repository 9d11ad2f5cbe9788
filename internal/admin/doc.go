// Package admin is Gregor's HTTP admin listener: liveness, readiness and
// Prometheus metrics, plus the routes other packages add with Handle (the
// JSON API under /v1/ and the web console).
//
// # Endpoints
//
//	GET /livez    200 "ok" while the process can serve HTTP at all.
//	GET /readyz   200 when every registered readiness condition is ready,
//	              503 otherwise. The body lists each condition, ready ([+]),
//	              ready with a warning ([!]) or not ([-]), with the time of
//	              its last change and its detail, if any:
//	                  [+]log recovery ready since 2025-01-02T03:04:05Z
//	                  [!]log dir /data ready with a warning since …: full: …
//	                  [-]metadata not ready since 2025-01-02T03:04:00Z
//	                  not ready: 1 of 3 conditions not ready
//	              (all ready with warnings: "ready, with N warning(s)").
//	              ?format=json gives {"ready":false,"conditions":[{"name",
//	              "ready","warning","detail","since"}...]} (warning and detail
//	              left out when unset); any other format is a 400.
//	GET /metrics  the Config.Registry in Prometheus exposition format, with
//	              the Go runtime (go_*) and process (process_*) collectors
//	              registered in it and promhttp_metric_handler_* counting
//	              scrapes.
//
// The JSON API (RegisterAPI over a Source; read-only but for the
// acknowledgement of an unclean election) answers
// indented JSON, Content-Type application/json, with the view types of
// source.go:
//
//	GET /v1/cluster                           ClusterView: this broker, its log
//	                                          dirs, every registered broker with
//	                                          its state and epoch, the metadata
//	                                          quorum (Source's choice; the broker's
//	                                          asks the quorum leader, DescribeQuorum)
//	GET /v1/topics                            []TopicSummary, by name
//	GET /v1/topics/{topic}                    TopicView
//	GET /v1/partitions/{topic}/{partition}    PartitionView: offsets, segments,
//	                                          replicas, cleaner, retention plan,
//	                                          groups' committed offsets, configs,
//	                                          the transactions holding its LSO
//	GET /v1/partitions/{topic}/{partition}/records
//	                                          RecordPage; query: offset or
//	                                          timestamp (unix ms, not both),
//	                                          max_records, max_bytes,
//	                                          isolation=read_uncommitted (default)
//	                                          or read_committed
//	GET /v1/partitions/{topic}/{partition}/cleaner
//	                                          the log cleaner's PartitionStatus
//	                                          (served by package cleaner)
//	GET /v1/groups                            []GroupSummary, by id
//	GET /v1/groups/{group}                    GroupView (the id may hold "/")
//	POST /v1/partitions/{topic}/{partition}/unclean-election/ack[?leader_epoch=N]
//	                                          acknowledge the partition's recorded
//	                                          unclean election (UncleanAcker;
//	                                          only on the active controller's
//	                                          node: elsewhere 421 not_controller
//	                                          with controller_id; 409 conflict
//	                                          when none or another epoch is
//	                                          recorded; 403 for a browser's
//	                                          cross-site request: Origin of
//	                                          another host, or Sec-Fetch-Site);
//	                                          the one write of the API
//	GET /v1/transactions                      []HeldPartition: every partition
//	                                          whose LSO transactions hold back,
//	                                          each classified (open, timing_out,
//	                                          completing, unreplicated, orphan,
//	                                          unknown) with what ends it
//	GET /v1/transactions/ongoing              OngoingView: the transactions
//	                                          under way on every coordinator
//	                                          (each with its broker), and the
//	                                          coordinators not reached
//	GET /v1/transactions/auto-abort           AutoAbortView: the automatic
//	                                          abort of orphans (settings,
//	                                          watched orphans, recent aborts)
//
// Errors are {"error": "<message>", "code": "<code>"}: 400 bad_request for a
// path or query parameter that does not parse (the message names it), 404
// not_found when the Source answers ErrNotFound, 503 unavailable with
// Retry-After: 1 when it answers ErrUnavailable (consumer groups while
// __consumer_offsets loads), 500 internal otherwise (also logged).
//
// # Security (Config.Security, the broker's gregor.admin.* configs)
//
// TLS: with a certificate the listener serves HTTPS only. Authentication:
// none (the default, fine on loopback), basic (users with bcrypt hashes,
// htpasswd -B's format; an unknown user costs the same bcrypt comparison as
// a known one) or bearer (tokens compared in constant time); every route
// but /livez and /readyz then answers 401 with a WWW-Authenticate challenge
// to a request without valid credentials. A Security that cannot work
// (basic without users) is refused by Validate, and New serves only the
// health probes with it (fail closed). Record contents (the JSON API's
// records and the console's message browser) answer 403 unless
// RecordBrowser, and Go's profiler (/debug/pprof/) is registered only with
// Pprof. Config.MetricsAddr adds a second, plain HTTP, unauthenticated
// listener serving only /metrics, /livez and /readyz, so Prometheus needs
// no credentials while the rest stays protected.
//
// # Host check
//
// While the listener is bound to a loopback address (the default), a
// request whose Host header is neither a loopback address nor "localhost"
// is answered 421 Misdirected Request and logged: this keeps a web page that
// rebinds its own DNS name to 127.0.0.1 from reading the console or the JSON
// API through a local browser. Bound to any other address, every Host is
// served.
//
// # Readiness
//
// A condition is registered by its first SetReady or SetCondition call and
// never removed. A Warning condition counts as ready: it is for states an
// operator must see but a load balancer must not act on (the broker's full
// log dirs), and the console's health strip shows it amber.
// With no condition registered /readyz reports ready, so a component that
// gates readiness must call SetReady(name, false) before Serve starts (the
// broker does this for each startup step, e.g. "log recovery", "metadata").
//
// # Concurrency
//
// SetReady, Handle and the HTTP handlers are safe for concurrent use;
// routes should be added before Serve. Serve runs in the caller's goroutine
// and returns nil once stopped by Shutdown or by the end of its context;
// in both cases in-flight requests finish first (Shutdown bounds that by
// its context and then closes connections at once). Request headers must
// arrive within 10 seconds.
//
// # Web console
//
// RegisterConsole adds a read-only, server-rendered console over the same
// Source as the JSON API: html/template pages with inline SVG drawings, a
// stylesheet, an icon and one small script, all embedded (web/), so it works
// offline and needs no front-end build. Every page links the /v1 route with
// the same data ("JSON").
//
//	GET /                                   overview: broker, listeners, uptime,
//	                                        health strip (readiness conditions,
//	                                        brokers unfenced, the metadata
//	                                        quorum's leader, under-replicated,
//	                                        under min ISR, offline, stray logs,
//	                                        partitions whose LSO is held back,
//	                                        unclean elections), an alert per
//	                                        unacknowledged unclean election
//	                                        (what happened, from which offset
//	                                        records are lost, the command that
//	                                        acknowledges it), the brokers (state, epoch, endpoints,
//	                                        the controller), the quorum's voters
//	                                        (log end offset, lag, last fetch and
//	                                        caught up, directory id) and this
//	                                        node's place in it, log dirs with
//	                                        disk bars and their state (online;
//	                                        full: produce refused; offline:
//	                                        why), the stray logs (partition
//	                                        logs the metadata does not know)
//	GET /ui/topics[?q=]                     topics: partitions, size, records,
//	                                        consumer lag per group
//	GET /ui/topics/{topic}                  configs with sources; partitions with
//	                                        the four offsets and a small bar each
//	GET /ui/topics/{topic}/{partition}      the partition and its offsets bar,
//	                                        with the unclean election alert
//	GET /ui/topics/{topic}/{partition}/messages
//	                                        message browser: from=offset|timestamp,
//	                                        offset, ts (UTC datetime, RFC 3339 or
//	                                        unix ms), isolation, limit (≤ 1000),
//	                                        as=text|base64
//	GET /ui/compaction                      compacted partitions by dirty ratio,
//	                                        with the cleaner's reason
//	GET /ui/transactions                    every partition whose LSO is below
//	                                        its HW with each holder's class,
//	                                        explanation and what ends it (an
//	                                        orphan's abort command, what the
//	                                        automatic abort will do); the
//	                                        ongoing transactions of every
//	                                        coordinator, with age against
//	                                        timeout (and the coordinators not
//	                                        reached); the
//	                                        automatic abort's settings, watched
//	                                        orphans and aborts
//	GET /ui/groups, /ui/groups/{group}      groups; members, assignments,
//	                                        committed offsets and lag
//	GET /ui/static/{file}                   assets (?v=<content hash>, cacheable)
//
// Unknown pages, topics, partitions and groups answer the console's 404
// page; bad message-browser parameters a 400 page; ErrUnavailable, and a
// request cancelled or timed out, a 503 page with Retry-After: 1.
//
// The offsets bar maps offsets linearly (and monotonically, for any int64)
// onto a fixed viewBox: segments to scale with the active one marked and
// the part below the log start offset faded; on a compacted log the
// cleaner's clean / dirty / uncleanable split and the dirty ratio against
// min.cleanable.dirty.ratio; the range retention deletes next, and when;
// lines for the log start offset, LSO, HW, LEO, cleaner point and each
// replica's LEO; a tick per group's committed offset; a second row of the
// segments by size. When the LSO is below the HW, its marker says why: the
// transaction starting at the LSO (PartitionView.Transactions), with its
// class in data-held-by and its class, explanation and first offset in the
// tooltip, a line under the drawing and the offsets table; nothing of the
// kind when LSO = HW. Each marker is an element with data-marker (log-start,
// lso, hw, leo, replica-leo, cleaner-point, group) and data-offset, which
// the browser tests read back. Offsets outside the drawn range are pinned to
// its edge and say so. A table under the drawing lists the same numbers.
//
// Bounds: tables stop at 1000 rows, the partition page's segment table
// shows the oldest and newest 50 of a longer list, the bar draws at most
// 240 segment blocks (the middle of a longer list merged into one), 50
// group ticks and 16 replicas, and the compaction board reads the cleaner's
// status (Source.Cleaner) of the 500 dirtiest partitions; each page says
// what it left out.
// The message browser sends the form and a "Scanning…" line with a Stop
// button first, then runs Source.Records under the request's context
// (Stop calls window.stop(), which drops the request and so cancels the
// scan) bounded by 15 s, then sends the records. Keys, values and headers
// are shown as text, or base64 when not UTF-8 (or when asked), values cut
// at 2048 characters and keys and header values at 256; tombstones and null
// keys are marked.
//
// Safety: html/template escapes every value; the pages carry a
// Content-Security-Policy that allows only this server's own script and
// stylesheet (no inline script or style), so data shown on a page cannot
// run. The only forms are GET forms (topic filter, message browser).
package admin
