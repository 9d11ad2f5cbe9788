package api

import (
	"bytes"
	"crypto/rand"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/bufpool"
	"github.com/gregor-broker/gregor/internal/server"
)

// Record bytes of a catch-up fetch are read from the segment files into
// pooled buffers and written to the socket from there (server.BulkResponse),
// so each byte is copied twice by the kernel (pread, then the socket write)
// and never by the broker: no freshly allocated buffer is cleared, and kmsg
// does not copy the records into the encode buffer.

const (
	// bulkMinBytes is the smallest read served from the pool and written
	// from its own buffer; smaller reads are allocated and encoded inline,
	// where a copy costs less than an extra piece in the write.
	bulkMinBytes = 16 << 10
	// Pooled buffers come in power-of-two sizes from 1<<minBufShift to
	// 1<<maxBufShift bytes; larger reads (a PartitionMaxBytes above 16 MiB,
	// or a first batch that size) are allocated and not kept.
	minBufShift = 14
	maxBufShift = 24
	// maxPooledBytes bounds what the pool keeps between fetches, so a burst
	// of concurrent large fetches does not pin its peak memory.
	maxPooledBytes = 32 << 20
)

// recordBuffers is the broker-wide pool of fetch read buffers.
var recordBuffers = bufpool.New(1<<minBufShift, 1<<maxBufShift, maxPooledBytes)

// fetchBuffers are the pooled buffers one fetch has read into.
type fetchBuffers struct{ bufs [][]byte }

// get returns a pooled buffer for a read of up to n bytes, or nil for a
// read small enough to allocate.
func (f *fetchBuffers) get(n int) []byte {
	if n < bulkMinBytes {
		return nil
	}
	b := recordBuffers.Get(n)
	f.bufs = append(f.bufs, b)
	return b
}

// release returns every buffer to the pool; the caller must no longer use
// what was read into them.
func (f *fetchBuffers) release() {
	for i, b := range f.bufs {
		recordBuffers.Put(b)
		f.bufs[i] = nil
	}
	f.bufs = f.bufs[:0]
}

// bulkFetchResponse is a Fetch response whose large record sets are written
// from the buffers they were read into.
type bulkFetchResponse struct {
	*kmsg.FetchResponse
	bufs fetchBuffers
}

var _ server.BulkResponse = (*bulkFetchResponse)(nil)

// recordsMarker stands in for a partition's record batches while kmsg
// encodes the rest of the response, so kmsg alone decides the layout and
// AppendBulk only has to find where each record set goes. It is 24 bytes
// drawn at random per process, so nothing else in a response (names, ids,
// numbers, small record sets encoded inline) holds them but by a 2^-192
// chance; a marker not found behind its length prefix falls back to copying.
var recordsMarker = func() []byte {
	b := make([]byte, 24)
	rand.Read(b)
	return b
}()

// AppendBulk implements server.BulkResponse.
func (r *bulkFetchResponse) AppendBulk(dst []byte) ([]byte, []server.Splice) {
	var bulk [][]byte
	var slots []*kmsg.FetchResponseTopicPartition
	for ti := range r.Topics {
		ps := r.Topics[ti].Partitions
		for pi := range ps {
			if p := &ps[pi]; len(p.RecordBatches) >= bulkMinBytes {
				bulk, slots = append(bulk, p.RecordBatches), append(slots, p)
				p.RecordBatches = recordsMarker
			}
		}
	}
	if len(bulk) == 0 {
		return r.FetchResponse.AppendTo(dst), nil
	}
	enc := r.FetchResponse.AppendTo(make([]byte, 0, 256+64*len(bulk)))
	for i, p := range slots {
		p.RecordBatches = bulk[i]
	}
	out, splices, ok := spliceRecords(dst, enc, bulk, r.IsFlexible())
	if !ok {
		// Unreachable unless kmsg changes how it writes record sets: fall
		// back to the copying encoder.
		return r.FetchResponse.AppendTo(dst), nil
	}
	return out, splices
}

// spliceRecords copies enc, an encoding with recordsMarker in place of each
// of bulk's record sets, to dst with each marker's length prefix rewritten
// for the real record set and the marker itself left out, and says where
// the record sets go.
func spliceRecords(dst, enc []byte, bulk [][]byte, flexible bool) ([]byte, []server.Splice, bool) {
	markerPrefix := kbin.AppendInt32(nil, int32(len(recordsMarker)))
	if flexible {
		markerPrefix = kbin.AppendUvarint(nil, uint32(len(recordsMarker))+1)
	}
	splices := make([]server.Splice, 0, len(bulk))
	from := 0
	for _, data := range bulk {
		i := bytes.Index(enc[from:], recordsMarker)
		if i < len(markerPrefix) || !bytes.Equal(enc[from+i-len(markerPrefix):from+i], markerPrefix) {
			return dst, nil, false
		}
		at := from + i
		dst = append(dst, enc[from:at-len(markerPrefix)]...)
		if flexible {
			dst = kbin.AppendUvarint(dst, uint32(len(data))+1)
		} else {
			dst = kbin.AppendInt32(dst, int32(len(data)))
		}
		splices = append(splices, server.Splice{At: len(dst), Data: data})
		from = at + len(recordsMarker)
	}
	return append(dst, enc[from:]...), splices, true
}

// Release implements server.BulkResponse.
func (r *bulkFetchResponse) Release() { r.bufs.release() }
