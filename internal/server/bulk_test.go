package server

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testBulk answers as its Response would, with every other run of 7 bytes
// of the body handed over as bulk data instead of encoded.
type testBulk struct {
	kmsg.Response
	released *atomic.Int32
}

func (b *testBulk) AppendBulk(dst []byte) ([]byte, []Splice) {
	body := b.Response.AppendTo(nil)
	var splices []Splice
	for i := 0; i < len(body); i += 14 {
		dst = append(dst, body[i:min(i+7, len(body))]...)
		if i+7 < len(body) {
			splices = append(splices, Splice{At: len(dst), Data: body[i+7 : min(i+14, len(body))]})
		}
	}
	return dst, splices
}

func (b *testBulk) Release() { b.released.Add(1) }

// A BulkResponse reaches the client as the same frame AppendTo would make,
// and is released once it has been written.
func TestBulkResponseIsWrittenWholeAndReleased(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	for _, name := range []string{"a-topic", "another-topic", "and-a-third"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	var plain []byte
	for _, id := range []string{"ok", idBulk, idBulk} {
		c.send(req, id)
		frame, err := c.readFrame(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		body := frame[4:] // after the correlation id
		if plain == nil {
			plain = body
			continue
		}
		if !bytes.Equal(body, plain) {
			t.Fatalf("bulk response body differs from the plain one:\n%x\n%x", body, plain)
		}
	}
	got := kmsg.NewPtrMetadataResponse()
	got.SetVersion(12)
	if err := got.ReadFrom(plain[1:]); err != nil || len(got.Topics) != 3 { // after the header's tags
		t.Fatalf("decoding the response: %v (%d topics)", err, len(got.Topics))
	}
	// Release runs after the write the client has just read: wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for ts.h.bulkReleased.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := ts.h.bulkReleased.Load(); n != 2 {
		t.Fatalf("BulkResponse released %d times, want 2", n)
	}
	if n := ts.metric(t, "kafka_server_socket_server_metrics_outgoing_byte_total", nil); n <= 0 {
		t.Fatalf("bulk responses not counted in outgoing bytes: %v", n)
	}
}

// A BulkResponse that is not sent is still released.
func TestUnsentBulkResponseIsReleased(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	c.send(req, idBulkWrongType)
	c.expectClosed()
	deadline := time.Now().Add(5 * time.Second)
	for ts.h.bulkReleased.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("a dropped BulkResponse was released %d times, want 1", ts.h.bulkReleased.Load())
		}
		time.Sleep(time.Millisecond)
	}
}
