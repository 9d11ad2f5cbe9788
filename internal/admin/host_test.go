package admin

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestLoopbackListenerRefusesForeignHost checks the DNS-rebinding guard: on
// a loopback listener only loopback Hosts and localhost are served.
func TestLoopbackListenerRefusesForeignHost(t *testing.T) {
	a := newTestAdmin(t)
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve(context.Background()) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.Shutdown(ctx)
		<-served
	}()
	_, port, err := net.SplitHostPort(a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	for host, want := range map[string]int{
		"127.0.0.1:" + port:      http.StatusOK,
		"localhost:" + port:      http.StatusOK,
		"LOCALHOST":              http.StatusOK,
		"127.0.0.2:" + port:      http.StatusOK,
		"[::1]:" + port:          http.StatusOK,
		"evil.example:" + port:   http.StatusMisdirectedRequest,
		"evil.example":           http.StatusMisdirectedRequest,
		"10.0.0.1:" + port:       http.StatusMisdirectedRequest,
		"localhost.evil.example": http.StatusMisdirectedRequest,
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+a.Addr().String()+"/livez", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: status %d, want %d", host, resp.StatusCode, want)
		}
	}
}
