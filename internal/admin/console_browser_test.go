package admin

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/admin/consoletest"
)

// TestConsoleInBrowser loads every console page over the fake Source in
// headless Chromium: no console errors, the offsets bar's markers in order
// as laid out by the browser, the Stop button ending a slow scan on the
// server, and a screenshot of the partition page kept as an artifact.
func TestConsoleInBrowser(t *testing.T) {
	src := heldFakeSource()
	slow := src.partitions[tpKey("orders", 0)]
	slow.Topic = "slow"
	src.partitions[tpKey("slow", 0)] = slow
	src.slowTopic, src.canceled = "slow", make(chan struct{})
	a := newConsoleAdmin(t, src)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	b := consoletest.Start(t, 60*time.Second)
	for _, path := range []string{
		"/", "/ui/topics", "/ui/topics/orders", "/ui/topics/orders/0", "/ui/topics/orders/1",
		"/ui/topics/users/0", "/ui/compaction", "/ui/groups", "/ui/groups/billing", "/ui/transactions",
		"/ui/groups/" + url.PathEscape(xssGroup), "/ui/topics/orders/0/messages?offset=125&limit=10",
		"/ui/topics/orders/0/messages?from=timestamp&ts=2025-01-02T03:02:00",
	} {
		b.Visit(srv.URL+path, http.StatusOK)
	}
	b.Visit(srv.URL+"/ui/topics/nope", http.StatusNotFound)
	// The page ran no script from the data: the key is text.
	b.Visit(srv.URL+"/ui/topics/orders/0/messages?offset=130&limit=1", http.StatusOK)
	if got := b.Text("table.records tbody td:nth-child(3) code"); got != `<script>alert("k")</script>` {
		t.Errorf("key cell shows %q", got)
	}

	b.Visit(srv.URL+"/ui/topics/orders/0", http.StatusOK)
	xs := b.CheckMarkerOrder()
	if !(xs["log-start"] < xs["lso"] && xs["lso"] < xs["hw"] && xs["hw"] < xs["leo"]) {
		t.Errorf("orders/0 has distinct offsets, so the markers must be strictly ordered: %v", xs)
	}
	groups := 0
	for _, m := range b.Markers() {
		if m.Kind == "group" {
			groups++
		}
	}
	if groups != 2 {
		t.Errorf("%d group ticks, want 2", groups)
	}
	path := b.Screenshot("console-partition-fake.png")
	t.Logf("partition page screenshot: %s", path)

	// Stop: the scan on the server ends when the button stops the load.
	b.Open(srv.URL + "/ui/topics/slow/0/messages")
	b.WaitVisible("[data-stop-scan]")
	b.Click("[data-stop-scan]")
	select {
	case <-src.canceled:
	case <-time.After(scanTimeout / 2):
		t.Fatal("the scan went on after Stop")
	}
	if got := b.Text("#scan-status"); !strings.Contains(got, "stopped") {
		t.Errorf("after Stop the status reads %q", got)
	}
	b.CheckNoProblems("after Stop")
}
