package auth

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-broker/gregor/internal/clock"
)

// Audit counts and logs authentications and authorization denials. Log
// lines are rate-limited per kind (auditBurst a second; the next line
// logged says how many were dropped), so a client hammering the broker with
// bad passwords cannot flood the log; the counters count everything.
type Audit struct {
	log   *slog.Logger
	clock clock.Clock
	m     *auditMetrics

	mu     sync.Mutex
	limits map[string]*logLimit
}

type logLimit struct {
	window     time.Time
	n, dropped int
}

const auditBurst = 10

type auditMetrics struct {
	failed, succeeded, reauthFailed, reauthSucceeded, expired *prometheus.CounterVec
	denied                                                    *prometheus.CounterVec
}

// NewAudit registers the security metrics on reg (nil: none):
//
//	kafka_server_socket_server_metrics_failed_authentication_total{listener}
//	kafka_server_socket_server_metrics_successful_authentication_total{listener}
//	kafka_server_socket_server_metrics_failed_reauthentication_total{listener}
//	kafka_server_socket_server_metrics_successful_reauthentication_total{listener}
//	kafka_server_socket_server_metrics_expired_connections_killed_count{listener}
//	gregor_authorizer_denied_requests_total{request}
func NewAudit(logger *slog.Logger, reg prometheus.Registerer, c clock.Clock) *Audit {
	if logger == nil {
		logger = slog.Default()
	}
	if c == nil {
		c = clock.Real{}
	}
	counter := func(name, help, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	}
	m := &auditMetrics{
		failed: counter("kafka_server_socket_server_metrics_failed_authentication_total",
			"Connections that failed authentication: TLS handshakes, certificate principals and SASL.", "listener"),
		succeeded: counter("kafka_server_socket_server_metrics_successful_authentication_total",
			"Connections authenticated (every connection of a PLAINTEXT listener counts).", "listener"),
		reauthFailed: counter("kafka_server_socket_server_metrics_failed_reauthentication_total",
			"SASL re-authentications (KIP-368) that failed.", "listener"),
		reauthSucceeded: counter("kafka_server_socket_server_metrics_successful_reauthentication_total",
			"SASL re-authentications (KIP-368) that succeeded.", "listener"),
		expired: counter("kafka_server_socket_server_metrics_expired_connections_killed_count",
			"Connections closed because their SASL session expired without re-authentication.", "listener"),
		denied: counter("gregor_authorizer_denied_requests_total",
			"Requests, or parts of requests, the authorizer denied, by API.", "request"),
	}
	if reg != nil {
		reg.MustRegister(m.failed, m.succeeded, m.reauthFailed, m.reauthSucceeded, m.expired, m.denied)
	}
	return &Audit{log: logger, clock: c, m: m, limits: map[string]*logLimit{}}
}

// InitDenied makes the denial series of these requests visible at zero.
func (a *Audit) InitDenied(requests []string) {
	for _, r := range requests {
		a.m.denied.WithLabelValues(r)
	}
}

// listener makes the listener's series visible at zero.
func (a *Audit) listener(name string) {
	for _, c := range []*prometheus.CounterVec{a.m.failed, a.m.succeeded, a.m.reauthFailed, a.m.reauthSucceeded, a.m.expired} {
		c.WithLabelValues(name)
	}
}

// logf logs at level unless kind logged auditBurst lines this second.
func (a *Audit) logf(kind string, level slog.Level, msg string, args ...any) {
	now := a.clock.Now()
	a.mu.Lock()
	l := a.limits[kind]
	if l == nil {
		l = &logLimit{}
		a.limits[kind] = l
	}
	if now.Sub(l.window) >= time.Second {
		l.window, l.n = now, 0
	}
	l.n++
	if l.n > auditBurst {
		l.dropped++
		a.mu.Unlock()
		return
	}
	dropped := l.dropped
	l.dropped = 0
	a.mu.Unlock()
	if dropped > 0 {
		args = append(args, "suppressed_since_last", dropped)
	}
	a.log.Log(context.Background(), level, msg, args...)
}

func (a *Audit) failed(s *Session, reauth bool, err error) {
	if reauth {
		a.m.reauthFailed.WithLabelValues(s.l.name).Inc()
	} else {
		a.m.failed.WithLabelValues(s.l.name).Inc()
	}
	a.logf("authentication", slog.LevelInfo, "authentication failed", "listener", s.l.name, "remote", s.host.String(),
		"mechanism", s.mech, "reauthentication", reauth, "err", err)
}

func (a *Audit) authenticated(s *Session, p Principal, reauth bool) {
	if reauth {
		a.m.reauthSucceeded.WithLabelValues(s.l.name).Inc()
		return
	}
	a.m.succeeded.WithLabelValues(s.l.name).Inc()
}

func (a *Audit) expired(s *Session) {
	a.m.expired.WithLabelValues(s.l.name).Inc()
	a.logf("expired", slog.LevelInfo, "closing a connection whose SASL session expired", "listener", s.l.name,
		"remote", s.host.String(), "principal", s.principal.String())
}

// TLSFailed counts and logs a failed TLS handshake or certificate principal.
func (a *Audit) tlsFailed(listener, remote string, err error) {
	a.m.failed.WithLabelValues(listener).Inc()
	a.logf("authentication", slog.LevelInfo, "TLS authentication failed", "listener", listener, "remote", remote, "err", err)
}

// Denied counts and logs an authorization denial of an explicitly named
// resource (Kafka's logIfDenied), at Kafka's audit level INFO.
func (a *Audit) Denied(request string, act Action) {
	a.m.denied.WithLabelValues(request).Inc()
	a.logf("denied", slog.LevelInfo, "authorization denied", "request", request, "principal", act.Principal.String(),
		"host", act.Host.String(), "operation", act.Operation.String(), "resource_type", act.Resource.String(), "resource", act.Name)
}
