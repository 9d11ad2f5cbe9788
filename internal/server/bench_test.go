package server

import (
	"encoding/binary"
	"fmt"
	"net"
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

// BenchmarkReadFrame measures reading request frames of several sizes from a
// connection (net.Pipe, so the copy from the peer is in the figure): the
// frame's growth as its bytes arrive and the request memory accounting.
func BenchmarkReadFrame(b *testing.B) {
	for _, size := range []int{100 << 10, 1000 << 10, 16 << 20} {
		b.Run(fmt.Sprint(size>>10, "KiB"), func(b *testing.B) {
			s := New(Config{}, newFakeHandler())
			client, server := net.Pipe()
			defer client.Close()
			frame := binary.BigEndian.AppendUint32(nil, uint32(size))
			frame = append(frame, make([]byte, size)...)
			go func() {
				for {
					if _, err := client.Write(frame); err != nil {
						return
					}
				}
			}()
			c := newConn(s, 1, server)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.readFrame(s.cfg.SocketRequestMaxBytes); err != nil {
					b.Fatal(err)
				}
				c.res.Release()
				c.trimFrame()
			}
		})
	}
}
