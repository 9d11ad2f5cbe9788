package server

import (
	"bytes"
	"cmp"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/testpki"
)

// testBulk answers as its Response would, with every other run of bytes of
// the body (7 unless run says) handed over as bulk data instead of encoded:
// as Data, or with bodies as Data and Body in turn.
type testBulk struct {
	kmsg.Response
	released *atomic.Int32
	bodies   bool
	run      int
	failing  bool // Bodies fail after their first piece
	// inFile makes the Bodies FileBodies over a temporary file, cut short
	// by shortFile bytes; fileReads counts their ReadAt calls.
	inFile    bool
	shortFile int
	fileReads *atomic.Int32
	files     []*os.File
}

func (b *testBulk) AppendBulk(dst []byte) ([]byte, []Splice) {
	body := b.Response.AppendTo(nil)
	run := cmp.Or(b.run, 7)
	var splices []Splice
	for i, k := 0, 0; i < len(body); i, k = i+2*run, k+1 {
		dst = append(dst, body[i:min(i+run, len(body))]...)
		if i+run >= len(body) {
			break
		}
		bulk := body[i+run : min(i+2*run, len(body))]
		switch {
		case !b.bodies || k%2 == 0:
			splices = append(splices, Splice{At: len(dst), Data: bulk})
		case b.failing:
			splices = append(splices, Splice{At: len(dst), Body: failingBody(len(bulk))})
		case b.inFile:
			splices = append(splices, Splice{At: len(dst), Body: b.fileBody(bulk)})
		default:
			splices = append(splices, Splice{At: len(dst), Body: bytesBody(bulk)})
		}
	}
	return dst, splices
}

func (b *testBulk) Release() {
	for _, f := range b.files {
		f.Close()
		os.Remove(f.Name())
	}
	b.released.Add(1)
}

// fileBody writes data at byte 100 of a new temporary file, minus
// shortFile bytes at its end, and returns a FileBody over it.
func (b *testBulk) fileBody(data []byte) Body {
	f, err := os.CreateTemp("", "gregor-body-")
	if err != nil {
		panic(err)
	}
	b.files = append(b.files, f)
	if _, err := f.WriteAt(data[:len(data)-min(b.shortFile, len(data))], 100); err != nil {
		panic(err)
	}
	return &testFileBody{f: f, off: 100, size: len(data), reads: b.fileReads}
}

// testFileBody is a FileBody over bytes of a file.
type testFileBody struct {
	f     *os.File
	off   int64
	size  int
	reads *atomic.Int32
}

func (b *testFileBody) Size() int { return b.size }

func (b *testFileBody) ReadAt(p []byte, off int64) (int, error) {
	b.reads.Add(1)
	return b.f.ReadAt(p, b.off+off)
}

func (b *testFileBody) File() (*os.File, int64, bool) { return b.f, b.off, true }

// bytesBody is a Body over bytes in memory.
type bytesBody []byte

func (b bytesBody) Size() int { return len(b) }

func (b bytesBody) ReadAt(p []byte, off int64) (int, error) {
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// failingBody reads zeros for its first piece and fails after.
type failingBody int

func (f failingBody) Size() int { return int(f) }

func (f failingBody) ReadAt(p []byte, off int64) (int, error) {
	if off > 0 {
		return 0, errors.New("injected read failure")
	}
	clear(p)
	return len(p), nil
}

// bigMetadataRequest asks for topics whose names make a response of 5 MiB:
// with 1.1 MiB runs, its bulk pieces are Data, then a Body larger than the
// server's body buffer.
func bigMetadataRequest() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	for i := range 180 {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(fmt.Sprintf("%05d-%s", i, strings.Repeat("t", 30000)))
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// Bodies, read piece by piece while the frame is written (one larger than
// the server's body buffer among them), reach the client as the same frame
// AppendTo would make.
func TestBulkResponseBodiesAreWrittenWhole(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	for _, req := range []*kmsg.MetadataRequest{bigMetadataRequest(), kmsg.NewPtrMetadataRequest()} {
		req.SetVersion(12)
		var plain []byte
		for _, id := range []string{"ok", idBulkBody, idBulkLarge} {
			c.send(req, id)
			frame, err := c.readFrame(30 * time.Second) // a few MiB, slow under -race
			if err != nil {
				t.Fatal(err)
			}
			if plain == nil {
				plain = frame[4:]
				continue
			}
			if !bytes.Equal(frame[4:], plain) {
				t.Fatalf("%s response (%d bytes) differs from the plain one (%d bytes)", id, len(frame)-4, len(plain))
			}
		}
	}
}

// A FileBody on a plaintext TCP connection is sent from its file with
// sendfile(2), never read into the broker, and the client gets the frame
// AppendTo would make; a file shorter than its body closes the connection.
func TestFileBodiesAreSentFromTheirFile(t *testing.T) {
	if !sendfileSupported {
		t.Skip("no sendfile on this platform")
	}
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	req := bigMetadataRequest()
	c.send(req, "ok")
	plain, err := c.readFrame(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.send(req, idBulkFile)
	frame, err := c.readFrame(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frame[4:], plain[4:]) {
		t.Fatalf("response sent from files (%d bytes) differs from the plain one (%d bytes)", len(frame)-4, len(plain)-4)
	}
	if n := ts.h.fileReads.Load(); n != 0 {
		t.Fatalf("file bodies read %d times into the broker, want 0 (sendfile)", n)
	}
	c.send(req, idBulkFileShort)
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(c.nc)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading until the connection closes: %v", err)
	}
	if len(got) < 4 || len(got)-4 >= int(binary.BigEndian.Uint32(got)) {
		t.Fatalf("read %d bytes of the response from a short file, want a truncated frame", len(got))
	}
	ts.logs.requireContains(t, "sendfile", "unexpected EOF")
}

// A Body that cannot be read closes the connection (its frame size is sent
// already) and the response is released.
func TestFailingBodyClosesTheConnection(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	c.send(bigMetadataRequest(), idBulkFailing)
	// The frame's start arrives, then the connection closes before its end.
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c.nc)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading until the connection closes: %v", err)
	}
	if len(got) < 4 || len(got)-4 >= int(binary.BigEndian.Uint32(got)) {
		t.Fatalf("read %d bytes of the response before the close, want a truncated frame", len(got))
	}
	deadline := time.Now().Add(5 * time.Second)
	for ts.h.bulkReleased.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("BulkResponse released %d times, want 1", ts.h.bulkReleased.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if !strings.Contains(ts.logs.String(), "injected read failure") {
		t.Fatalf("the read failure is not logged:\n%s", ts.logs.String())
	}
}

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

// On a TLS connection a FileBody cannot go out with sendfile(2), which
// would put plaintext bytes into the TLS stream: it is read and written
// through the connection (the copy path), and the client decrypts the same
// frame a plaintext client gets.
func TestFileBodiesOverTLSAreCopied(t *testing.T) {
	ca := testpki.New(t)
	cert := ca.Issue(t, "broker", []string{"localhost"}).TLS(t)
	serverTLS := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	ts := startServer(t, Config{Secure: func(nc net.Conn) (net.Conn, any) { return tls.Server(nc, serverTLS), nil }})
	c := dial(t, ts.addr)
	c.nc = tls.Client(c.nc, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12})
	req := bigMetadataRequest()
	c.send(req, "ok")
	plain, err := c.readFrame(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c.send(req, idBulkFile)
		frame, err := c.readFrame(30 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(frame[4:], plain[4:]) {
			t.Fatalf("response from files over TLS (%d bytes) differs from the plain one (%d bytes)", len(frame)-4, len(plain)-4)
		}
	}
	if ts.h.fileReads.Load() == 0 {
		t.Fatal("file bodies were not read into the broker: over TLS they must be copied, not sent with sendfile")
	}
	c.roundTrip() // the TLS stream is intact after the bulk responses
}

// plainWrapper wraps a TCP connection without changing what it writes, and
// says so (PlainSocket), as a SASL_PLAINTEXT connection does.
type plainWrapper struct{ net.Conn }

func (w plainWrapper) PlainSocket() *net.TCPConn { tc, _ := w.Conn.(*net.TCPConn); return tc }

// Behind a wrapper that writes through to plaintext TCP, FileBodies still
// go out with sendfile(2).
func TestFileBodiesBehindAPlainWrapperUseSendfile(t *testing.T) {
	if !sendfileSupported {
		t.Skip("no sendfile on this platform")
	}
	ts := startServer(t, Config{Secure: func(nc net.Conn) (net.Conn, any) { return plainWrapper{nc}, nil }})
	c := dial(t, ts.addr)
	req := bigMetadataRequest()
	c.send(req, "ok")
	plain, err := c.readFrame(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.send(req, idBulkFile)
	frame, err := c.readFrame(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frame[4:], plain[4:]) {
		t.Fatalf("response sent from files (%d bytes) differs from the plain one (%d bytes)", len(frame)-4, len(plain)-4)
	}
	if n := ts.h.fileReads.Load(); n != 0 {
		t.Fatalf("file bodies read %d times into the broker, want 0 (sendfile)", n)
	}
}
