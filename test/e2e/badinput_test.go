package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// rawConn speaks the Kafka framing by hand so a test can send what no client
// would.
type rawConn struct {
	t    testing.TB
	c    net.Conn
	f    *kmsg.RequestFormatter
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e-raw"))}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// frame encodes req as a complete request frame.
func (r *rawConn) frame(req kmsg.Request) []byte {
	r.corr++
	return r.f.AppendRequest(nil, req, r.corr)
}

// roundTrip sends req and decodes its response.
func (r *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	r.write(r.frame(req))
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := r.readResponse(resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16())
	if err := resp.ReadFrom(body); err != nil {
		r.t.Fatalf("decoding %s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// readResponse reads one response frame, checks the correlation id, skips
// the flexible header's tagged fields when tagged is set, and returns the
// body.
func (r *rawConn) readResponse(tagged bool) []byte {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(r.c, size[:]); err != nil {
		r.t.Fatalf("reading response size: %v", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		r.t.Fatalf("response frame of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r.c, buf); err != nil {
		r.t.Fatalf("reading response: %v", err)
	}
	rd := kbin.Reader{Src: buf}
	if corr := rd.Int32(); corr != r.corr {
		r.t.Fatalf("response correlation id %d, want %d", corr, r.corr)
	}
	if tagged {
		for i := rd.Uvarint(); i > 0; i-- {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
	}
	if !rd.Ok() {
		r.t.Fatal("response frame too short for its header")
	}
	return rd.Src
}

// expectClosed asserts the broker closes the connection (EOF or reset)
// rather than answering or leaving it open.
func (r *rawConn) expectClosed(what string) {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	var b [1]byte
	n, err := r.c.Read(b[:])
	switch {
	case n > 0:
		r.t.Fatalf("%s: the broker answered; want the connection closed", what)
	case errors.Is(err, os.ErrDeadlineExceeded):
		r.t.Fatalf("%s: the connection is still open after 15s; want it closed", what)
	case err == nil:
		r.t.Fatalf("%s: read returned nothing and no error", what)
	}
}

// expectWorks asserts a fresh ApiVersions round trip succeeds on r.
func (r *rawConn) expectWorks(what string) {
	r.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "e2e", "1"
	resp := r.roundTrip(req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		r.t.Fatalf("%s: ApiVersions on another connection: error %d, %d keys", what, resp.ErrorCode, len(resp.ApiKeys))
	}
}

// validBatch builds an uncompressed v2 batch with the given values, with a
// correct length and CRC.
func validBatch(values ...string) []byte {
	var recs []byte
	for i, v := range values {
		rec := kmsg.NewRecord()
		rec.OffsetDelta = int32(i)
		rec.Value = []byte(v)
		rec.Key = nil
		body := rec.AppendTo(nil)[1:] // drop the placeholder length (0, one byte)
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	now := time.Now().UnixMilli()
	b := kmsg.NewRecordBatch()
	b.PartitionLeaderEpoch = -1
	b.Magic = 2
	b.LastOffsetDelta = int32(len(values) - 1)
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.NumRecords = int32(len(values))
	b.Records = recs
	enc := b.AppendTo(nil)
	binary.BigEndian.PutUint32(enc[8:], uint32(len(enc)-12))
	fixCRC(enc)
	return enc
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fixCRC sets the batch CRC over the bytes from the attributes to the end.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
}

func produceRequest(topic string, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func produceErr(t testing.TB, r *rawConn, topic string, batch []byte) (*kerr.Error, string) {
	t.Helper()
	resp := r.roundTrip(produceRequest(topic, batch)).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response has %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	var msg string
	if p.ErrorMessage != nil {
		msg = *p.ErrorMessage
	}
	if p.ErrorCode == 0 {
		return nil, msg
	}
	return kerr.ErrorForCode(p.ErrorCode).(*kerr.Error), msg
}

// Malformed frames and requests close (only) the offending connection or get
// Kafka's error code, and the broker keeps serving everyone else.
func TestBadInput(t *testing.T) {
	t.Parallel()
	const maxReq = 1 << 20
	b := brokertest.Start(t, map[string]string{"socket.request.max.bytes": fmt.Sprint(maxReq)})
	addr := b.Addr().String()
	topic := uniqueTopic(t)
	createTopic(t, addr, topic, 1, nil)

	// One well-behaved connection is used throughout; it must survive
	// every other connection's misbehaviour.
	good := dialRaw(t, addr)
	good.expectWorks("at start")

	t.Run("oversized frame", func(t *testing.T) {
		bad := dialRaw(t, addr)
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], maxReq+1)
		bad.write(hdr[:])
		bad.expectClosed("frame size socket.request.max.bytes+1")
		good.expectWorks("after an oversized frame")
	})
	t.Run("negative frame size", func(t *testing.T) {
		bad := dialRaw(t, addr)
		bad.write([]byte{0xff, 0xff, 0xff, 0xf0})
		bad.expectClosed("frame size -16")
		good.expectWorks("after a negative frame size")
	})
	t.Run("frame too short for a header", func(t *testing.T) {
		bad := dialRaw(t, addr)
		bad.write([]byte{0, 0, 0, 3, 0, 18, 0})
		bad.expectClosed("3-byte frame")
		good.expectWorks("after a 3-byte frame")
	})
	t.Run("truncated frame", func(t *testing.T) {
		bad := dialRaw(t, addr)
		full := bad.frame(kmsg.NewPtrMetadataRequest())
		bad.write(full[:len(full)/2])
		if err := bad.c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		bad.expectClosed("frame cut off half way")
		good.expectWorks("after a truncated frame")
	})
	t.Run("unknown api key", func(t *testing.T) {
		bad := dialRaw(t, addr)
		// key 2000, version 0, correlation id 1, null client id
		bad.write([]byte{0, 0, 0, 10, 0x07, 0xd0, 0, 0, 0, 0, 0, 1, 0xff, 0xff})
		bad.expectClosed("api key 2000")
		good.expectWorks("after an unknown api key")
	})
	t.Run("unsupported version", func(t *testing.T) {
		bad := dialRaw(t, addr)
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 99
		bad.write(bad.frame(req))
		bad.expectClosed("Metadata v99")

		bad = dialRaw(t, addr)
		preq := produceRequest(topic, validBatch("v2"))
		preq.Version = 2 // removed in Kafka 4.0
		bad.write(bad.frame(preq))
		bad.expectClosed("Produce v2")
		good.expectWorks("after unsupported versions")
	})
	t.Run("ApiVersions unsupported version", func(t *testing.T) {
		c := dialRaw(t, addr)
		// A version the broker does not know: it cannot parse the body,
		// so it answers v0 with UNSUPPORTED_VERSION and its own range.
		var frame []byte
		frame = kbin.AppendInt16(frame, kmsg.ApiVersions.Int16())
		frame = kbin.AppendInt16(frame, 99)
		frame = kbin.AppendInt32(frame, 7)
		frame = kbin.AppendNullableString(frame, nil)
		frame = append(frame, 0, 1, 2, 3, 4, 5) // a body no one can read
		c.write(append(kbin.AppendInt32(nil, int32(len(frame))), frame...))
		c.corr = 7
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := resp.ReadFrom(c.readResponse(false)); err != nil {
			t.Fatalf("decoding the v0 answer: %v", err)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Fatalf("ApiVersions v99: error %d, want UNSUPPORTED_VERSION (35)", resp.ErrorCode)
		}
		found := false
		for _, k := range resp.ApiKeys {
			if k.ApiKey == kmsg.ApiVersions.Int16() {
				found = k.MinVersion == 0 && k.MaxVersion >= 3
			}
		}
		if !found {
			t.Fatalf("the UNSUPPORTED_VERSION answer lists %+v, want ApiVersions with its served range", resp.ApiKeys)
		}
		c.expectWorks("the same connection after ApiVersions v99")
	})

	// Produce with broken batches: each is refused with Kafka's code and
	// the connection stays usable.
	pc := dialRaw(t, addr)
	corrupt := func(name string, want *kerr.Error, batch []byte) {
		t.Run(name, func(t *testing.T) {
			got, msg := produceErr(t, pc, topic, batch)
			if got != want {
				name := "no error"
				if got != nil {
					name = got.Message
				}
				t.Errorf("got %s (%q), want %s", name, msg, want.Message)
			}
		})
	}
	{
		bb := validBatch("a", "b", "c")
		bb[len(bb)-2] ^= 0xff // a byte of the last value, after the CRC was set
		corrupt("bad CRC", kerr.CorruptMessage, bb)
	}
	{
		// Kafka reads a batch of the length it claims, so a length a few
		// bytes short makes the CRC cover the wrong bytes (the left-over
		// bytes are too few to be read as a batch).
		bb := validBatch("a", "b", "c")
		binary.BigEndian.PutUint32(bb[8:], binary.BigEndian.Uint32(bb[8:])-5)
		corrupt("batch length short by 5", kerr.CorruptMessage, bb)
	}
	{
		// Below Kafka's minimum record overhead: CorruptRecordException
		// while finding the batch.
		bb := validBatch("a")
		binary.BigEndian.PutUint32(bb[8:], 10)
		corrupt("batch length 10", kerr.CorruptMessage, bb)
	}
	{
		// Kafka finds no complete batch in the bytes sent ("must have at
		// least one record batch per partition"): INVALID_RECORD.
		bb := validBatch("a", "b", "c")
		binary.BigEndian.PutUint32(bb[8:], binary.BigEndian.Uint32(bb[8:])+100)
		corrupt("batch length beyond the bytes sent", kerr.InvalidRecord, bb)
	}
	{
		corrupt("two batches", kerr.InvalidRecord, append(validBatch("a"), validBatch("b")...))
	}
	pc.expectWorks("the producing connection after refused batches")

	t.Run("illegal topic names", func(t *testing.T) {
		names := []string{"bad name", "bad/name", "..", ".", strings.Repeat("x", 250), "ünïcode"}
		for _, auto := range []bool{true, false} {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 12
			req.AllowAutoTopicCreation = auto
			for _, n := range names {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(n)
				req.Topics = append(req.Topics, rt)
			}
			resp := good.roundTrip(req).(*kmsg.MetadataResponse)
			got := map[string]int16{}
			for _, rt := range resp.Topics {
				if rt.Topic != nil {
					got[*rt.Topic] = rt.ErrorCode
				}
			}
			for _, n := range names {
				if code, ok := got[n]; !ok || code != kerr.InvalidTopicException.Code {
					t.Errorf("Metadata (auto-create %v) for %q: error %d (present %v), want INVALID_TOPIC_EXCEPTION", auto, short(n), code, ok)
				}
			}
		}
		if !servesRaw(t, good, kmsg.CreateTopics) {
			t.Log("CreateTopics is not served yet; checked Metadata only")
			return
		}
		for _, n := range names {
			if code, msg := createTopicRaw(t, good, n, 1); code != kerr.InvalidTopicException.Code {
				t.Errorf("CreateTopics %q: error %d (%s), want INVALID_TOPIC_EXCEPTION", short(n), code, msg)
			}
		}
	})
	t.Run("invalid partition counts", func(t *testing.T) {
		if !servesRaw(t, good, kmsg.CreateTopics) {
			t.Skip("CreateTopics is not served yet")
		}
		for i, n := range []int32{0, -2, -100, 1 << 30, 2147483647} {
			name := fmt.Sprintf("%s-p%d", topic, i)
			if code, msg := createTopicRaw(t, good, name, n); code != kerr.InvalidPartitions.Code {
				t.Errorf("CreateTopics with %d partitions: error %d (%s), want INVALID_PARTITIONS", n, code, msg)
			}
		}
	})

	// After all of that the broker still serves a normal produce and
	// consume with a real client.
	ctx := testCtx(t, 30*time.Second)
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	produceSync(ctx, t, cl, &kgo.Record{Value: []byte("still alive")})
	got := consumeN(ctx, t, addr, topic, 1)
	if string(got[0].Value) != "still alive" {
		t.Fatalf("consumed %q", got[0].Value)
	}
	good.expectWorks("at the end")
}

func short(s string) string {
	if len(s) > 20 {
		return fmt.Sprintf("%s…(%d bytes)", s[:12], len(s))
	}
	return s
}

func servesRaw(t testing.TB, r *rawConn, key kmsg.Key) bool {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "e2e", "1"
	resp := r.roundTrip(req).(*kmsg.ApiVersionsResponse)
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key.Int16() {
			return true
		}
	}
	return false
}

func createTopicRaw(t testing.TB, r *rawConn, name string, partitions int32) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 5
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = name
	rt.NumPartitions = partitions
	rt.ReplicationFactor = 1
	req.Topics = append(req.Topics, rt)
	resp := r.roundTrip(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("CreateTopics answered %d topics", len(resp.Topics))
	}
	var msg string
	if m := resp.Topics[0].ErrorMessage; m != nil {
		msg = *m
	}
	return resp.Topics[0].ErrorCode, msg
}
