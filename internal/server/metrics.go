package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reasons counted by gregor_network_request_errors_total.
const (
	reasonInvalidReceive     = "invalid_receive"
	reasonUnknownAPIKey      = "unknown_api_key"
	reasonUnsupportedVersion = "unsupported_version"
	reasonDecode             = "decode"
	reasonHandler            = "handler"
	reasonPanic              = "panic"
)

// Metrics holds the listener's Prometheus collectors; the names are listed
// in the package documentation. One Metrics may be shared by several
// Servers (one per listener). A nil *Metrics records nothing.
type Metrics struct {
	requests    *prometheus.CounterVec
	totalTime   *prometheus.HistogramVec
	bytesIn     *prometheus.CounterVec
	bytesOut    *prometheus.CounterVec
	connections *prometheus.GaugeVec
	created     *prometheus.CounterVec
	closed      *prometheus.CounterVec
	errors      *prometheus.CounterVec
	memoryWaits *prometheus.CounterVec
	inflight    *prometheus.HistogramVec
	stageTime   [numStages]*prometheus.HistogramVec

	// perAPI caches the children of requests and totalTime, so the request
	// path does not hash label values.
	perAPI   [numSlots]atomic.Pointer[apiMetrics]
	perAPIMu sync.Mutex
}

type apiMetrics struct {
	totalTime prometheus.Observer
	stageTime [numStages]prometheus.Observer
	// byVersion[v] counts requests of version v; nil until first used.
	byVersion []atomic.Pointer[prometheus.Counter]
}

// The stages of a request's total time, Kafka's RequestMetrics split as a
// pipelined connection sees them; they add up to the total time. Each is a
// histogram kafka_network_requestmetrics_<stage>_time_seconds{request}.
const (
	// stageRequestQueue: last request byte read to the handler called
	// (header and body decoded on the way).
	stageRequestQueue = iota
	// stageLocal: the handler's own work (for Produce: validation and the
	// append to the page cache).
	stageLocal
	// stageResponseQueue: handler returned to the connection's writer
	// taking the response up, i.e. waiting behind the responses of the
	// connection's earlier requests, which are answered in order.
	stageResponseQueue
	// stageRemote: the writer took the response up to its answer known
	// (a Deferred finished: for Produce the fsync or the replicas it waits
	// for, for Fetch the long poll); zero for answers known at once.
	stageRemote
	// stageResponseSend: the response encoded and written to the socket.
	stageResponseSend
	numStages
)

var stageNames = [numStages]string{"request_queue", "local", "response_queue", "remote", "response_send"}

var stageHelp = [numStages]string{
	"Time from the last byte of a request read to the handler called (decoding included), by API name.",
	"Time the handler spent on a request before returning (for Produce: validation and the append), by API name.",
	"Time from the handler's return to the connection's writer taking the response up, behind the responses of the connection's earlier requests, by API name.",
	"Time from the writer taking a response up to its answer being known (for Produce the fsync or replicas it waits for, for Fetch the long poll), by API name.",
	"Time to encode and write a response to the socket, by API name.",
}

var timeBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// NewMetrics creates the collectors and registers them with reg (if reg is
// not nil). It panics if registration fails, as a second registration of
// the same names is a programming error.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_network_requestmetrics_requests_total",
			Help: "Requests decoded and handed to the API layer, by API name and version.",
		}, []string{"request", "version"}),
		totalTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kafka_network_requestmetrics_total_time_seconds",
			Help:    "Time from the last byte of a request read to the last byte of its response written, by API name.",
			Buckets: timeBuckets,
		}, []string{"request"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_socket_server_metrics_incoming_byte_total",
			Help: "Bytes of request frames read, size prefix included, by listener.",
		}, []string{"listener"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_socket_server_metrics_outgoing_byte_total",
			Help: "Bytes of response frames written, size prefix included, by listener.",
		}, []string{"listener"}),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kafka_server_socket_server_metrics_connection_count",
			Help: "Open client connections, by listener.",
		}, []string{"listener"}),
		created: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_socket_server_metrics_connection_creation_total",
			Help: "Client connections accepted, by listener.",
		}, []string{"listener"}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_socket_server_metrics_connection_close_total",
			Help: "Client connections closed, by listener.",
		}, []string{"listener"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_network_request_errors_total",
			Help: "Requests that closed their connection instead of being answered, by listener and reason.",
		}, []string{"listener", "reason"}),
		memoryWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gregor_network_request_memory_waits_total",
			Help: "Times a connection stopped reading a request until request memory (queued.max.request.bytes) was given back, by listener.",
		}, []string{"listener"}),
		inflight: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gregor_network_inflight_requests",
			Help:    "Requests of its connection in flight (read, not yet answered) when a request is handed to the API layer, itself included, by listener: its mean is how many requests each connection pipelines.",
			Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64},
		}, []string{"listener"}),
	}
	for i := range m.stageTime {
		m.stageTime[i] = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kafka_network_requestmetrics_" + stageNames[i] + "_time_seconds",
			Help:    stageHelp[i],
			Buckets: timeBuckets,
		}, []string{"request"})
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.totalTime, m.bytesIn, m.bytesOut,
			m.connections, m.created, m.closed, m.errors, m.memoryWaits, m.inflight)
		for _, h := range m.stageTime {
			reg.MustRegister(h)
		}
	}
	return m
}

func (m *Metrics) api(key int16) *apiMetrics {
	if a := m.perAPI[key].Load(); a != nil {
		return a
	}
	m.perAPIMu.Lock()
	defer m.perAPIMu.Unlock()
	if a := m.perAPI[key].Load(); a != nil {
		return a
	}
	var maxVersion int16
	if r := kmsg.RequestForKey(slotKey(key)); r != nil {
		maxVersion = r.MaxVersion()
	}
	a := &apiMetrics{
		totalTime: m.totalTime.WithLabelValues(slotName(key)),
		byVersion: make([]atomic.Pointer[prometheus.Counter], int(maxVersion)+1),
	}
	for i, h := range m.stageTime {
		a.stageTime[i] = h.WithLabelValues(slotName(key))
	}
	m.perAPI[key].Store(a)
	return a
}

// Metric slots: one per API key, then Kafka's two names for Fetch, which
// its RequestMetrics splits by who fetches ("FetchConsumer" for consumers,
// "FetchFollower" for replicas) instead of counting under "Fetch".
const (
	slotFetchConsumer = kmsg.MaxKey + 1 + iota
	slotFetchFollower
	numSlots
)

func slotName(slot int16) string {
	switch slot {
	case slotFetchConsumer:
		return "FetchConsumer"
	case slotFetchFollower:
		return "FetchFollower"
	}
	return kmsg.NameForKey(slot)
}

func slotKey(slot int16) int16 {
	if slot == slotFetchConsumer || slot == slotFetchFollower {
		return kmsg.Fetch.Int16()
	}
	return slot
}

// metricSlot is the slot a decoded request is counted in.
func metricSlot(key int16, body kmsg.Request) int16 {
	if f, ok := body.(*kmsg.FetchRequest); ok && key == kmsg.Fetch.Int16() {
		if f.ReplicaID >= 0 || f.ReplicaState.ID >= 0 {
			return slotFetchFollower
		}
		return slotFetchConsumer
	}
	return key
}

// request counts one request of key and version.
func (m *Metrics) request(key, version int16) {
	if m == nil || key < 0 || int(key) >= len(m.perAPI) {
		return
	}
	a := m.api(key)
	if version < 0 || int(version) >= len(a.byVersion) {
		m.requests.WithLabelValues(slotName(key), strconv.Itoa(int(version))).Inc()
		return
	}
	p := a.byVersion[version].Load()
	if p == nil {
		c := m.requests.WithLabelValues(slotName(key), strconv.Itoa(int(version)))
		p = &c
		a.byVersion[version].Store(p)
	}
	(*p).Inc()
}

// observe records the total time of a request of key.
func (m *Metrics) observe(key int16, d time.Duration) {
	if m == nil || key < 0 || int(key) >= len(m.perAPI) {
		return
	}
	m.api(key).totalTime.Observe(d.Seconds())
}

// stage records the time a request of key spent in one stage.
func (m *Metrics) stage(key int16, stage int, d time.Duration) {
	if m == nil || key < 0 || int(key) >= len(m.perAPI) {
		return
	}
	m.api(key).stageTime[stage].Observe(d.Seconds())
}

// listenerMetrics are the per-listener children, resolved once per Server.
type listenerMetrics struct {
	m                                                   *Metrics
	listener                                            string
	bytesIn, bytesOut, created, closedConn, memoryWaits prometheus.Counter
	connections                                         prometheus.Gauge
	inflightObs                                         prometheus.Observer
}

func (m *Metrics) forListener(listener string) *listenerMetrics {
	if m == nil {
		return nil
	}
	return &listenerMetrics{
		m:           m,
		listener:    listener,
		bytesIn:     m.bytesIn.WithLabelValues(listener),
		bytesOut:    m.bytesOut.WithLabelValues(listener),
		created:     m.created.WithLabelValues(listener),
		closedConn:  m.closed.WithLabelValues(listener),
		connections: m.connections.WithLabelValues(listener),
		memoryWaits: m.memoryWaits.WithLabelValues(listener),
		inflightObs: m.inflight.WithLabelValues(listener),
	}
}

func (l *listenerMetrics) memoryWait() {
	if l != nil {
		l.memoryWaits.Inc()
	}
}

func (l *listenerMetrics) inflight(n int) {
	if l != nil {
		l.inflightObs.Observe(float64(n))
	}
}

func (l *listenerMetrics) in(n int) {
	if l != nil {
		l.bytesIn.Add(float64(n))
	}
}

func (l *listenerMetrics) out(n int) {
	if l != nil {
		l.bytesOut.Add(float64(n))
	}
}

func (l *listenerMetrics) opened() {
	if l != nil {
		l.created.Inc()
		l.connections.Inc()
	}
}

func (l *listenerMetrics) closed() {
	if l != nil {
		l.closedConn.Inc()
		l.connections.Dec()
	}
}

func (l *listenerMetrics) error(reason string) {
	if l != nil {
		l.m.errors.WithLabelValues(l.listener, reason).Inc()
	}
}

func (l *listenerMetrics) request(key, version int16) {
	if l != nil {
		l.m.request(key, version)
	}
}

func (l *listenerMetrics) observe(key int16, d time.Duration) {
	if l != nil {
		l.m.observe(key, d)
	}
}

func (l *listenerMetrics) stage(key int16, stage int, d time.Duration) {
	if l != nil {
		l.m.stage(key, stage, d)
	}
}
