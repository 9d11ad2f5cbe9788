package api

import (
	"bytes"
	"crypto/rand"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/server"
)

// A Fetch response holds no record bytes of any size: a record set of
// bulkMinBytes or more is located in its segment file and cut to whole
// batches (log.Span.Whole) but not read; the response carries the span, and
// the server reads it into a bounded buffer while it writes the response
// (server.Body). So what a fetch costs in memory does not grow with
// MaxBytes, fetch.max.bytes or the number of consumers, and bytes a client
// asks for and never reads are never read from disk. Record sets smaller
// than that are read at once and encoded inline, up to eagerMaxBytes per
// response.

const (
	// bulkMinBytes is the smallest record set written from its segment
	// file; below it a read and a copy cost less than an extra piece in
	// the write.
	bulkMinBytes = 16 << 10
	// eagerMaxBytes bounds the small record sets one response reads into
	// memory (a fetch of thousands of partitions); the others are written
	// from their files as large ones are.
	eagerMaxBytes = 1 << 20
)

// bulkFetchResponse is a Fetch response whose large record sets are read
// from their segment files while it is written: each one's partition holds
// recordsMarker in RecordBatches, and bodies holds the spans in the order
// kmsg encodes those partitions.
type bulkFetchResponse struct {
	*kmsg.FetchResponse
	bodies []log.Span
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
	enc := r.FetchResponse.AppendTo(make([]byte, 0, 256+64*len(r.bodies)))
	out, splices, ok := spliceRecords(dst, enc, r.bodies, r.IsFlexible())
	if !ok {
		// Unreachable unless kmsg changes how it writes record sets: read
		// the record sets and encode by copying.
		return r.appendCopied(dst), nil
	}
	return out, splices
}

// appendCopied encodes the response with its record sets read into memory.
// A record set that cannot be read is sent empty: the client fetches it
// again.
func (r *bulkFetchResponse) appendCopied(dst []byte) []byte {
	k := 0
	for ti := range r.Topics {
		ps := r.Topics[ti].Partitions
		for pi := range ps {
			if p := &ps[pi]; k < len(r.bodies) && bytes.Equal(p.RecordBatches, recordsMarker) {
				data, err := r.bodies[k].AppendTo(nil)
				if err != nil {
					data = data[:0]
				}
				p.RecordBatches = data
				k++
			}
		}
	}
	return r.FetchResponse.AppendTo(dst)
}

// spliceRecords copies enc, an encoding with recordsMarker in place of each
// of bodies' record sets, to dst with each marker's length prefix rewritten
// for the real record set and the marker itself left out, and says where
// the record sets go.
func spliceRecords(dst, enc []byte, bodies []log.Span, flexible bool) ([]byte, []server.Splice, bool) {
	markerPrefix := kbin.AppendInt32(nil, int32(len(recordsMarker)))
	if flexible {
		markerPrefix = kbin.AppendUvarint(nil, uint32(len(recordsMarker))+1)
	}
	splices := make([]server.Splice, 0, len(bodies))
	from := 0
	for _, body := range bodies {
		i := bytes.Index(enc[from:], recordsMarker)
		if i < len(markerPrefix) || !bytes.Equal(enc[from+i-len(markerPrefix):from+i], markerPrefix) {
			return dst, nil, false
		}
		at := from + i
		dst = append(dst, enc[from:at-len(markerPrefix)]...)
		if flexible {
			dst = kbin.AppendUvarint(dst, uint32(body.Size())+1)
		} else {
			dst = kbin.AppendInt32(dst, int32(body.Size()))
		}
		splices = append(splices, server.Splice{At: len(dst), Body: body})
		from = at + len(recordsMarker)
	}
	return append(dst, enc[from:]...), splices, true
}

// Release implements server.BulkResponse: the spans hold nothing to give back.
func (r *bulkFetchResponse) Release() {}

// A record set's span is sent from its segment file with sendfile(2) on
// plaintext connections.
var _ server.FileBody = log.Span{}
