// Package admin is Gregor's HTTP admin listener: liveness, readiness and
// Prometheus metrics, plus the routes other packages add with Handle (the
// JSON API under /v1/ and the web console).
//
// # Endpoints
//
//	GET /livez    200 "ok" while the process can serve HTTP at all.
//	GET /readyz   200 when every registered readiness condition is ready,
//	              503 otherwise. The body lists each condition, ready or not,
//	              with the time of its last change:
//	                  [+]log recovery ready since 2025-01-02T03:04:05Z
//	                  [-]metadata not ready since 2025-01-02T03:04:00Z
//	                  not ready: 1 of 2 conditions not ready
//	              ?format=json gives {"ready":false,"conditions":[{"name",
//	              "ready","since"}...]}; any other format is a 400.
//	GET /metrics  the Config.Registry in Prometheus exposition format, with
//	              the Go runtime (go_*) and process (process_*) collectors
//	              registered in it and promhttp_metric_handler_* counting
//	              scrapes.
//
// # Readiness
//
// A condition is registered by its first SetReady call and never removed.
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
package admin
