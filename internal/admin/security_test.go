package admin

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/gregor-broker/gregor/internal/testpki"
)

// serve runs an admin listener with sec and returns its base URL and a
// client that trusts it.
func serveSecure(t *testing.T, sec Security, metricsAddr string) (*Admin, string, *http.Client) {
	t.Helper()
	a := New(Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Security: sec, MetricsAddr: metricsAddr})
	RegisterAPI(a, newFakeSource())
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Serve(ctx); close(done) }()
	scheme, client := "http", newClient(t)
	t.Cleanup(func() { cancel(); <-done })
	if sec.TLS != nil {
		scheme = "https"
	}
	return a, scheme + "://" + a.Addr().String(), client
}

// newClient is an HTTP client whose idle connections close with the test.
func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Timeout: 10 * time.Second, Transport: tr}
}

func status(t *testing.T, c *http.Client, url string, header ...string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// By default the record browser and the profiler are off.
func TestAdminDefaultsHideRecordsAndProfiler(t *testing.T) {
	_, base, c := serveSecure(t, Security{}, "")
	for path, want := range map[string]int{
		"/v1/partitions/orders/0/records": http.StatusForbidden,
		"/debug/pprof/":                   http.StatusNotFound,
		"/v1/topics":                      http.StatusOK,
		"/metrics":                        http.StatusOK,
	} {
		if got := status(t, c, base+path); got != want {
			t.Errorf("GET %s: %d, want %d", path, got, want)
		}
	}
	_, base, c = serveSecure(t, Security{RecordBrowser: true, Pprof: true}, "")
	for _, path := range []string{"/v1/partitions/orders/0/records", "/debug/pprof/"} {
		if got := status(t, c, base+path); got != http.StatusOK {
			t.Errorf("enabled: GET %s: %d", path, got)
		}
	}
}

func TestAdminBasicAuth(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	users, err := ParseUsers("ops:" + string(hash))
	if err != nil {
		t.Fatal(err)
	}
	_, base, c := serveSecure(t, Security{Auth: "basic", Users: users}, "")
	basic := func(user, pw string) []string {
		req, _ := http.NewRequest("GET", "/", nil)
		req.SetBasicAuth(user, pw)
		return []string{"Authorization", req.Header.Get("Authorization")}
	}
	for _, tc := range []struct {
		path   string
		header []string
		want   int
	}{
		{"/v1/topics", nil, http.StatusUnauthorized},
		{"/metrics", nil, http.StatusUnauthorized},
		{"/v1/topics", basic("ops", "wrong"), http.StatusUnauthorized},
		{"/v1/topics", basic("nobody", "s3cret"), http.StatusUnauthorized},
		{"/v1/topics", basic("ops", "s3cret"), http.StatusOK},
		{"/livez", nil, http.StatusOK},
		{"/readyz", nil, http.StatusOK},
	} {
		if got := status(t, c, base+tc.path, tc.header...); got != tc.want {
			t.Errorf("GET %s %v: %d, want %d", tc.path, tc.header, got, tc.want)
		}
	}
	if _, err := ParseUsers("ops:plaintext"); err == nil {
		t.Error("a plaintext password was accepted as a hash")
	}
	if err := (Security{Auth: "basic"}).Validate(); err == nil {
		t.Error("basic auth without users validated")
	}
}

// Bearer tokens over HTTPS, and /metrics on a separate listener without
// authentication.
func TestAdminBearerTLSAndMetricsListener(t *testing.T) {
	ca := testpki.New(t)
	cert := ca.Issue(t, "admin", []string{"localhost"})
	a, base, c := serveSecure(t, Security{Auth: "bearer", Tokens: []string{"tok-1"}, TLS: &tls.Config{Certificates: []tls.Certificate{cert.TLS(t)}}},
		"127.0.0.1:0")
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: ca.Pool()}
	if got := status(t, c, base+"/v1/topics"); got != http.StatusUnauthorized {
		t.Errorf("no token: %d", got)
	}
	if got := status(t, c, base+"/v1/topics", "Authorization", "Bearer tok-2"); got != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", got)
	}
	if got := status(t, c, base+"/v1/topics", "Authorization", "Bearer tok-1"); got != http.StatusOK {
		t.Errorf("token: %d", got)
	}
	plain := newClient(t)
	if got := status(t, plain, strings.Replace(base, "https", "http", 1)+"/v1/topics"); got == http.StatusOK {
		t.Error("plain HTTP reached the routes of the HTTPS listener")
	}
	m := "http://" + a.MetricsAddr().String()
	for path, want := range map[string]int{"/metrics": 200, "/readyz": 200, "/v1/topics": 404} {
		if got := status(t, plain, m+path); got != want {
			t.Errorf("metrics listener GET %s: %d, want %d", path, got, want)
		}
	}
}
