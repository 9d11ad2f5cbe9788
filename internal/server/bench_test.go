package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkRoundTrip measures one ApiVersions v3 request and response over
// loopback, client side included.
func BenchmarkRoundTrip(b *testing.B) {
	ts := startServer(b, Config{})
	c := dial(b, ts.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	frame, _ := c.frame(req, "bench")
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	b.ReportAllocs()
	for b.Loop() {
		c.write(frame)
		if _, err := c.readFrame(5 * time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
