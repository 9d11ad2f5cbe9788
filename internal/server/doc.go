// Package server is Gregor's Kafka protocol listener: it accepts TCP
// connections, reads Kafka request frames, decodes their headers and bodies
// with kmsg, hands each request to a Handler and writes the responses back
// in order. It knows nothing about what the APIs do; internal/api does.
//
// It follows Kafka's SocketServer, Processor and RequestChannel.
//
// # Framing
//
// A frame is a 4-byte big-endian size and then that many bytes. A size below
// zero or above socket.request.max.bytes (Config.SocketRequestMaxBytes) is
// Kafka's InvalidReceiveException: it is logged with the remote address, the
// size and the limit, and that connection alone is closed. The size is
// checked before any buffer is sized for it, and no buffer is sized for it
// before its bytes arrive: a frame is read into at most 64 KiB first, then a
// buffer that grows fourfold each time it is full (a large produce is
// copied about a third of its size once), so a client that announces 100 MiB
// holds at most four times what it sent. Buffers above 64 KiB come from a broker-wide pool
// (internal/bufpool, at most 64 MiB kept) and go back once the request is
// answered, so large requests neither pin memory per connection nor pay for
// clearing a fresh buffer each time.
//
// # Request memory (queued.max.request.bytes)
//
// Each step of a frame's growth is taken from the broker-wide MemoryPool
// (Config.MemoryPool) before the buffer grows, and the frame gives all of it
// back once the Handler has returned (its bytes are no longer referenced;
// Kafka releases a request's buffer when its handler returns too, so a
// produce waiting for its fsync holds no request memory). When the pool is
// exhausted the
// connection stops reading, as Kafka mutes a channel, until memory is given
// back (counted in gregor_network_request_memory_waits_total); a connection
// that waits longer than connections.max.idle.ms is closed with a log line.
// A frame's first 64 KiB are counted but never waited for (Kafka makes every
// request wait): the small requests that keep clients alive (heartbeats,
// fetches, metadata) flow while large frames wait, and what they hold is
// bounded per connection, like its socket buffers.
// As in Kafka, one request may take the pool past its capacity so that a
// request larger than the whole pool still proceeds: the first frame that
// finds the pool exhausted keeps growing until it is handled, the
// others wait. So the request bytes held never exceed the pool plus one
// frame (plus the first 64 KiB of the frames being read), and partial frames
// that fill the pool never wait on each other forever. Gregor's default is 128 MiB where Kafka's is -1 (no limit); -1 or
// 0 turns the limit off (memory is still counted).
//
// A request is a request header then the body. Header v1 is api key, api
// version, correlation id and a nullable client id (always a plain int16
// length string, never compact); header v2, used by flexible versions as kmsg
// reports them, adds tagged fields, which are skipped. Only ControlledShutdown
// v0 uses header v0 (no client id).
//
// A response is a frame holding the correlation id, an empty tagged-field
// section when the response is flexible (header v1), and the body. An
// ApiVersions response always uses header v0. Each response is encoded into
// a reused buffer and written with one write, which is what a buffered
// writer flushed per response would do, without the copy. A BulkResponse (a
// Fetch response with large record sets) encodes everything but its bulk
// bytes into that buffer and says where they go: bytes of the handler's,
// written with one vectored write without a copy, or a Body (a span of a
// segment file) that the server reads while it writes the frame, through one
// pooled buffer of at most 1 MiB per connection, so a response's size costs
// no memory. A FileBody (a Body that names its file and offset, as a
// segment span does) is sent with sendfile(2) on plaintext TCP connections
// (bare, or behind a wrapper that implements PlainSocket: SASL_PLAINTEXT):
// the kernel moves the bytes from the page cache to the socket and the
// broker copies nothing; the frame's other pieces are written before it
// with writev. The offset is passed to sendfile, so the file's own offset
// (shared by every reader of the segment) never moves, and the file's
// descriptor is held for the call, so a segment closed meanwhile cannot
// hand its number to another file. TLS connections (SSL, SASL_SSL), whose
// records the kernel cannot make, and Bodies without a file take the
// copying path. A Body that cannot be
// read, or a file that ends early, closes the connection (its frame size is
// sent). Release is called once the write is done or the response is
// dropped.
//
// # What closes a connection
//
// As in Kafka, the connection is closed, with a log line, for: an invalid
// frame size; a frame too short for its header; an api key kmsg does not
// know or the Handler does not serve (Handler.Versions ok=false); a version
// outside the served range for any key but ApiVersions; a body that kmsg
// cannot decode or that has bytes left over after the request; a Handler
// error or a failed Deferred; a panic in the Handler or in a Deferred's
// Finish (logged with api key, version and stack); a
// response of the wrong type; a failed write, or a response Body that
// cannot be read; a wait for request memory longer than
// connections.max.idle.ms. Other connections are not affected.
//
// An ApiVersions request whose version is not served is not parsed (its
// layout is unknown) and is answered, as Kafka does (KIP-511), with an
// ApiVersions v0 response carrying UNSUPPORTED_VERSION (35) and an ApiKeys
// list holding only ApiVersions with the served range; clients retry with
// that version. The connection stays open.
//
// # Security
//
// Config.Secure, when set, sees every accepted connection before anything
// is read from it and returns the connection to read and write (for TLS
// listeners a crypto/tls server connection, whose handshake runs on the
// first read under the idle deadline) and an opaque session the Handler
// finds in ConnInfo.Session. What authentication and authorization mean is
// package auth's and the Handler's business; the server only carries the
// session, with one exception: a session that is an AuthGate and says it
// is authenticating (SASL, before it succeeded and while it
// re-authenticates) makes the reader read its next request only once every
// request before it is answered, and only a frame of at most the size it
// gives (sasl.server.max.receive.size), as Kafka's authenticator reads one
// request at a time. So pipelining starts only after authentication: a
// request the client sent right behind its SaslAuthenticate is read and
// admitted (Handle) after that exchange decided, and an unauthenticated
// client holds one small frame of request memory, not a pipeline of large
// ones.
//
// # Connections, pipelining and ordering
//
// Each connection has a reader goroutine and a writer goroutine. The reader
// reads a frame, decodes it, calls Handle, queues the response and reads
// the next frame, so a request is handled while the ones before it still
// wait: a produce for its fsync, a long-polling fetch for data. The writer
// writes the responses strictly in request order. Handle is called for one
// request of a connection at a time, in request order, so what a handler
// does before returning (a produce's appends, and the sequence checks that
// see the batches appended before) happens in request order; what it waits
// for afterwards it returns as a Deferred, whose Finish the writer calls
// when the responses before it are written. A produce's appends are done
// when Handle returns and their fsyncs started, so the fsync of one request
// covers the requests appended while it ran (group commit across requests).
// When nothing is in flight the reader writes a complete response itself.
// A nil response with a nil error sends nothing (acks=0 produce).
//
// The pipeline is bounded: the reader reads no further frame while
// Config.MaxInflightRequests requests (gregor.max.in.flight.requests.per.connection,
// default 5, Kafka clients' own maximum) or Config.MaxInflightBytes bytes of
// requests (gregor.max.in.flight.bytes.per.connection, default 64 MiB; one
// request is always read) are unanswered. So a client that never reads its
// responses, or a long poll in front of other requests, makes a connection
// hold at most that many responses, and it stops reading as Kafka mutes a
// channel.
//
// Request.Body's byte slices alias the connection's read buffer and are
// valid only until Handle returns, Deferred or not; strings in it are
// copies. A Deferred is finished exactly once, also when the connection
// closes before its turn (with a cancelled context, its answer dropped), so
// what it holds (a fetch session's lock, a waiter) is always given back. A
// handler error or a Deferred whose Finish fails closes the connection after
// the responses before it are written; the requests after it are finished
// and get no answer, and the close tells the client they will not.
//
// max.connections (Config.MaxConnections): while that many connections are
// open, the listener stops accepting, as Kafka's acceptor blocks, and logs
// it once; waiting clients are accepted when a connection closes.
// connections.max.idle.ms (Config.ConnectionsMaxIdle): a connection that
// does not send a request for that long is closed; a response that cannot
// be written for that long also closes the connection.
//
// # Concurrency and shutdown
//
// Listen binds, Serve runs the accept loop in the caller's goroutine and
// returns once every connection goroutine has ended. ServeConn serves a
// connection accepted elsewhere (the CONTROLLER listener's, which the raft
// transport accepts), counted and drained like the others. Handle is called with
// a context shared by all requests; it is cancelled only by Shutdown.
//
// Shutdown (and the end of Serve's context) stops accepting and stops every
// connection's reader (a read under way fails at once; a frame read as
// shutdown began is not handled); each connection writes the responses of
// the requests in flight, in order, and then closes, so no response is
// dropped while the client is left waiting. When every connection has closed
// Shutdown returns nil. If Shutdown's context ends first, the handler
// context is cancelled, every connection is closed at once (the Deferreds
// still queued are finished with a cancelled context), and the context's
// error is returned.
//
// # Metrics
//
// NewMetrics registers these collectors (names are stable):
//
//	kafka_network_requestmetrics_requests_total{request,version}      counter: requests decoded and handed to the Handler
//	kafka_network_requestmetrics_total_time_seconds{request}          histogram: last request byte read to last response byte written
//	kafka_network_requestmetrics_<stage>_time_seconds{request}        histogram: the total split in stages (below)
//	kafka_server_socket_server_metrics_incoming_byte_total{listener}  counter: request frame bytes read, size prefix included
//	kafka_server_socket_server_metrics_outgoing_byte_total{listener}  counter: response frame bytes written, size prefix included
//	kafka_server_socket_server_metrics_connection_count{listener}     gauge: open connections
//	kafka_server_socket_server_metrics_connection_creation_total{listener} counter: connections accepted
//	kafka_server_socket_server_metrics_connection_close_total{listener}    counter: connections closed
//	gregor_network_request_errors_total{listener,reason}              counter: requests not served normally
//	gregor_network_request_memory_waits_total{listener}               counter: waits for request memory
//	gregor_network_inflight_requests{listener}                        histogram: requests of the connection in flight, itself included, as each is handed on
//
// The stages, Kafka's RequestMetrics (RequestQueueTimeMs, LocalTimeMs,
// RemoteTimeMs, ResponseQueueTimeMs, ResponseSendTimeMs) as a pipelined
// connection has them, follow each other and add up to at most the total
// (what lies between them is a few instructions): request_queue (read to
// the Handler called, decoding included), local (the Handler's own work),
// response_queue (the Handler's return to the writer taking the response
// up: waiting behind the connection's earlier answers), remote (the writer
// taking it up to its answer known: a Deferred's Finish, e.g. the fsync a
// produce waits for; zero for answers known at once) and response_send
// (encode and write). A Deferred that became ready while earlier answers
// were still being waited for shows its wait as response_queue, not
// remote: the two together are the time spent waiting.
//
// MemoryPool.Collector adds kafka_network_socketserver_memorypoolavailable
// and kafka_network_socketserver_memorypoolused (gauges, broker-wide).
//
// request is kmsg.NameForKey (Kafka's API names, e.g. "Produce"), except
// Fetch, which is "FetchConsumer" or "FetchFollower" (a replica id or the
// ReplicaState tag set) as in Kafka's RequestMetrics. reason is
// one of invalid_receive (frame size), unknown_api_key,
// unsupported_version (including ApiVersions answered with
// UNSUPPORTED_VERSION), decode (header or body), handler (Handler error or
// wrong response type) and panic.
package server
