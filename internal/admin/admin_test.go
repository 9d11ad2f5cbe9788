package admin

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestAdmin(t *testing.T) *Admin {
	t.Helper()
	a := New(Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Security: Security{RecordBrowser: true}})
	a.now = func() time.Time { return t0 }
	return a
}

func get(t *testing.T, h http.Handler, target string) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec.Code, rec.Body.String(), rec.Header()
}

func TestLivez(t *testing.T) {
	a := newTestAdmin(t)
	code, body, _ := get(t, a.Handler(), "/livez")
	if code != http.StatusOK || body != "ok" {
		t.Fatalf("/livez = %d %q", code, body)
	}
}

func TestReadyzFollowsConditions(t *testing.T) {
	a := newTestAdmin(t)
	if code, body, _ := get(t, a.Handler(), "/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("no conditions: %d %q", code, body)
	}

	a.SetReady("log recovery", false)
	a.SetReady("metadata", true)
	code, body, hdr := get(t, a.Handler(), "/readyz")
	want := "[-]log recovery not ready since 2025-01-02T03:04:05Z\n" +
		"[+]metadata ready since 2025-01-02T03:04:05Z\n" +
		"not ready: 1 of 2 conditions not ready\n"
	if code != http.StatusServiceUnavailable || body != want {
		t.Fatalf("one not ready: %d\n%s\nwant 503\n%s", code, body, want)
	}
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q", ct)
	}

	code, body, hdr = get(t, a.Handler(), "/readyz?format=json")
	if code != http.StatusServiceUnavailable || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("json: %d %q", code, hdr.Get("Content-Type"))
	}
	var got readyzJSON
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("json body %q: %v", body, err)
	}
	if got.Ready || len(got.Conditions) != 2 || got.Conditions[0] != (conditionJSON{Name: "log recovery", Since: t0}) ||
		got.Conditions[1] != (conditionJSON{Name: "metadata", Ready: true, Since: t0}) {
		t.Fatalf("json body %+v", got)
	}

	later := t0.Add(time.Minute)
	a.now = func() time.Time { return later }
	a.SetReady("log recovery", true)
	a.SetReady("metadata", true) // unchanged: keeps its since
	code, body, _ = get(t, a.Handler(), "/readyz")
	want = "[+]log recovery ready since 2025-01-02T03:05:05Z\n" +
		"[+]metadata ready since 2025-01-02T03:04:05Z\n" +
		"ready\n"
	if code != http.StatusOK || body != want {
		t.Fatalf("all ready: %d\n%s\nwant 200\n%s", code, body, want)
	}

	if code, _, _ := get(t, a.Handler(), "/readyz?format=xml"); code != http.StatusBadRequest {
		t.Fatalf("unknown format: %d, want 400", code)
	}
}

// A warning (a full log dir) shows on /readyz with its detail but keeps it
// 200: a load balancer must not take a broker out for it. A condition that
// is not ready shows its detail too.
func TestReadyzWarningsStayReady(t *testing.T) {
	a := newTestAdmin(t)
	a.SetReady("metadata", true)
	a.SetCondition("log dir /d1", Warning, "full: 1 MiB usable")
	code, body, _ := get(t, a.Handler(), "/readyz")
	want := "[+]metadata ready since 2025-01-02T03:04:05Z\n" +
		"[!]log dir /d1 ready with a warning since 2025-01-02T03:04:05Z: full: 1 MiB usable\n" +
		"ready, with 1 warning(s)\n"
	if code != http.StatusOK || body != want {
		t.Fatalf("warning: %d\n%s\nwant 200\n%s", code, body, want)
	}
	code, body, _ = get(t, a.Handler(), "/readyz?format=json")
	var got readyzJSON
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK || !got.Ready || got.Conditions[1] != (conditionJSON{Name: "log dir /d1", Ready: true,
		Warning: true, Detail: "full: 1 MiB usable", Since: t0}) {
		t.Fatalf("json: %d %+v", code, got)
	}
	later := t0.Add(time.Minute)
	a.now = func() time.Time { return later }
	a.SetCondition("log dir /d1", NotReady, "offline: fsync failed")
	code, body, _ = get(t, a.Handler(), "/readyz")
	if code != http.StatusServiceUnavailable ||
		!strings.Contains(body, "[-]log dir /d1 not ready since 2025-01-02T03:05:05Z: offline: fsync failed\n") {
		t.Fatalf("not ready with detail: %d\n%s", code, body)
	}
}

func TestMetricsServesRegistryAndRuntimeCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "gregor_test_things_total", Help: "Things."})
	reg.MustRegister(c)
	c.Add(3)
	a := New(Config{Logger: slog.New(slog.DiscardHandler), Registry: reg})
	code, body, _ := get(t, a.Handler(), "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{"gregor_test_things_total 3", "go_goroutines ", "process_cpu_seconds_total ", "process_resident_memory_bytes "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// A second Admin on the same registry (e.g. a restarted listener) must
	// not panic on duplicate registration.
	New(Config{Logger: slog.New(slog.DiscardHandler), Registry: reg})
}

func TestHandleAddsRoutes(t *testing.T) {
	a := newTestAdmin(t)
	a.Handle("GET /v1/echo/{word}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.PathValue("word"))
	}))
	if code, body, _ := get(t, a.Handler(), "/v1/echo/hello"); code != http.StatusOK || body != "hello" {
		t.Fatalf("/v1/echo/hello = %d %q", code, body)
	}
}

func TestServeAndShutdownOnRealListener(t *testing.T) {
	a := newTestAdmin(t)
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve(context.Background()) }()

	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + a.Addr().String() + "/livez")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("/livez over TCP = %d %q", resp.StatusCode, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Shutdown")
	}
	if _, err := cl.Get("http://" + a.Addr().String() + "/livez"); err == nil {
		t.Fatal("still serving after Shutdown")
	}
}

func TestServeStopsWhenContextEnds(t *testing.T) {
	a := newTestAdmin(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx) }() // Serve listens itself
	deadline := time.Now().Add(5 * time.Second)
	for a.Addr() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Serve did not listen")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

func TestShutdownBeforeServe(t *testing.T) {
	a := newTestAdmin(t)
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.Serve(context.Background()); err != nil {
		t.Fatalf("Serve after Shutdown = %v, want nil", err)
	}
	if err := a.Listen(); err == nil {
		t.Fatal("Listen after Shutdown succeeded")
	}
}
