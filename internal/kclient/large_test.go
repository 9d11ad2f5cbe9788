package kclient

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/server"
)

// sized answers a Fetch with one partition whose records are MaxBytes
// bytes of a pattern that depends on the request's MinBytes (so an answer
// read into the wrong place, or half of one, shows).
type sized struct{}

func (sized) Versions(key int16) (int16, int16, bool) {
	if key == kmsg.Fetch.Int16() {
		return 4, 12, true
	}
	return 0, 0, false
}

func (sized) Handle(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req, ok := r.Body.(*kmsg.FetchRequest)
	if !ok {
		return nil, errors.New("unexpected")
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	t := kmsg.NewFetchResponseTopic()
	t.Topic = "t"
	p := kmsg.NewFetchResponseTopicPartition()
	p.RecordBatches = pattern(int(req.MaxBytes), byte(req.MinBytes))
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp, nil
}

var patterns sync.Map // [2]int{n, seed} → []byte

func pattern(n int, seed byte) []byte {
	if b, ok := patterns.Load([2]int{n, int(seed)}); ok {
		return b.([]byte)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i%251)
	}
	patterns.Store([2]int{n, int(seed)}, b)
	return b
}

func fetchSized(ctx context.Context, p *Pool, addr string, n int, seed byte, buf []byte) ([]byte, []byte, error) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxBytes, req.MinBytes = int32(n), int32(seed)
	resp, buf, err := p.RequestReusing(ctx, addr, req, buf)
	if err != nil {
		return nil, buf, err
	}
	return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches, buf, nil
}

// Answers large enough to be read with SO_RCVLOWAT arrive whole and in
// order, and a small answer after a large one is not held back waiting
// for bytes that never come (the mark is reset).
func TestLargeAnswersArriveWhole(t *testing.T) {
	addr := startServer(t, sized{})
	p := NewPool(Config{})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var buf []byte
	for i, n := range []int{100, lowatFrom + 1, 3 << 20, 10, 9 << 20, lowatFrom - 1, 2 << 20, 1} {
		seed := byte(i * 37)
		got, next, err := fetchSized(ctx, p, addr, n, seed, buf)
		if err != nil {
			t.Fatalf("answer %d (%d bytes): %v", i, n, err)
		}
		if !bytes.Equal(got, pattern(n, seed)) {
			t.Fatalf("answer %d (%d bytes) arrived changed", i, n)
		}
		buf = next
	}
}

// A large answer that stops arriving halfway fails its request when the
// request's context ends, SO_RCVLOWAT or not: the wait for the missing
// bytes is bounded like any read.
func TestLargeAnswerCutShortEndsWithTheContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
			return
		}
		// A 4 MiB frame of which only the correlation id and 1 MiB come.
		frame := make([]byte, 8+1<<20)
		binary.BigEndian.PutUint32(frame, 4<<20)
		binary.BigEndian.PutUint32(frame[4:], 1)
		c.Write(frame)
		io.Copy(io.Discard, c) // until the client gives up and closes
	}()
	p := NewPool(Config{})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, _, err = fetchSized(ctx, p, ln.Addr().String(), 10, 1, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the context's deadline", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("the request gave up after %v", took)
	}
}
