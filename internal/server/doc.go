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
// back once its response is written. When the pool is exhausted the
// connection stops reading, as Kafka mutes a channel, until memory is given
// back (counted in gregor_network_request_memory_waits_total); a connection
// that waits longer than connections.max.idle.ms is closed with a log line.
// A frame's first 64 KiB are counted but never waited for (Kafka makes every
// request wait): the small requests that keep clients alive (heartbeats,
// fetches, metadata) flow while large frames wait, and what they hold is
// bounded per connection, like its socket buffers.
// As in Kafka, one request may take the pool past its capacity so that a
// request larger than the whole pool still proceeds: the first frame that
// finds the pool exhausted keeps growing until its response is written, the
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
// no memory. A Body that cannot be read closes the connection (its frame
// size is sent). Release is called once the write is done or the response is
// dropped.
//
// # What closes a connection
//
// As in Kafka, the connection is closed, with a log line, for: an invalid
// frame size; a frame too short for its header; an api key kmsg does not
// know or the Handler does not serve (Handler.Versions ok=false); a version
// outside the served range for any key but ApiVersions; a body that kmsg
// cannot decode or that has bytes left over after the request; a Handler
// error; a panic in the Handler (logged with api key, version and stack); a
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
// # Connections and ordering
//
// Each connection has one goroutine that reads a frame, calls Handle, and
// writes the response before reading the next frame, so responses go out in
// request order and a connection has at most one request in flight, as a
// Kafka channel is muted until its response is sent. Pipelined requests
// wait in the socket and the connection's read buffer. A nil response with
// a nil error sends nothing (acks=0 produce).
//
// Request.Body's byte slices alias the connection's read buffer and are
// valid only until Handle returns; strings in it are copies. Pipelining
// (several requests of one connection in flight) will give each frame its
// own buffer and Reservation, so the pool bounds them all.
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
// Shutdown (and the end of Serve's context) stops accepting and closes the
// connections that are not handling a request; a connection handling a
// request finishes it, writes the response, and then closes. When every
// connection has closed Shutdown returns nil. If Shutdown's context ends
// first, the handler context is cancelled, every connection is closed at
// once, and the context's error is returned.
//
// # Metrics
//
// NewMetrics registers these collectors (names are stable):
//
//	kafka_network_requestmetrics_requests_total{request,version}      counter: requests decoded and handed to the Handler
//	kafka_network_requestmetrics_total_time_seconds{request}          histogram: last request byte read to last response byte written
//	kafka_server_socket_server_metrics_incoming_byte_total{listener}  counter: request frame bytes read, size prefix included
//	kafka_server_socket_server_metrics_outgoing_byte_total{listener}  counter: response frame bytes written, size prefix included
//	kafka_server_socket_server_metrics_connection_count{listener}     gauge: open connections
//	kafka_server_socket_server_metrics_connection_creation_total{listener} counter: connections accepted
//	kafka_server_socket_server_metrics_connection_close_total{listener}    counter: connections closed
//	gregor_network_request_errors_total{listener,reason}              counter: requests not served normally
//	gregor_network_request_memory_waits_total{listener}               counter: waits for request memory
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
