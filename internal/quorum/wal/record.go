package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// ErrCorrupt is returned when the WAL cannot be trusted: damage other than a
// torn tail, a gap in the entries, or a commit index past the last entry.
var ErrCorrupt = errors.New("wal: corrupt")

const (
	recEntry     byte = 1
	recHardState byte = 2
	recSnapshot  byte = 3

	headerLen = 9 // u32 length | u32 crc | u8 type

	// MaxRecordBytes bounds one record's payload. A marker carries every
	// entry after its snapshot, so the bound is generous; a larger length
	// field can only be damage.
	MaxRecordBytes = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends one framed record to buf.
func appendRecord(buf []byte, typ byte, payload []byte) []byte {
	var h [headerLen]byte
	binary.BigEndian.PutUint32(h[0:4], uint32(len(payload)))
	crc := crc32.Update(crc32.Update(0, castagnoli, []byte{typ}), castagnoli, payload)
	binary.BigEndian.PutUint32(h[4:8], crc)
	h[8] = typ
	buf = append(buf, h[:]...)
	return append(buf, payload...)
}

func marshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		// Marshalling a well-formed raftpb value cannot fail; a failure is
		// a programming error, not an I/O condition.
		panic(fmt.Sprintf("wal: marshal %T: %v", m, err))
	}
	return b
}

func appendEntries(buf []byte, ents []*pb.Entry) []byte {
	for _, e := range ents {
		buf = appendRecord(buf, recEntry, marshal(e))
	}
	return buf
}

func appendHardState(buf []byte, hs *pb.HardState) []byte {
	return appendRecord(buf, recHardState, marshal(hs))
}

// marker is a decoded SnapshotMarker record.
type marker struct {
	snap    *pb.SnapshotMetadata
	hs      *pb.HardState // nil if none
	entries []*pb.Entry
}

func appendMarker(buf []byte, m marker) []byte {
	p := appendBlob(nil, marshal(m.snap))
	if m.hs != nil {
		p = appendBlob(p, marshal(m.hs))
	} else {
		p = binary.BigEndian.AppendUint32(p, 0)
	}
	p = binary.BigEndian.AppendUint32(p, uint32(len(m.entries)))
	for _, e := range m.entries {
		p = appendBlob(p, marshal(e))
	}
	return appendRecord(buf, recSnapshot, p)
}

func appendBlob(p, b []byte) []byte {
	p = binary.BigEndian.AppendUint32(p, uint32(len(b)))
	return append(p, b...)
}

// decoder walks a marker payload, checking every length against what is
// left before slicing.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) u32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.err = fmt.Errorf("%w: snapshot marker truncated", ErrCorrupt)
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) blob() []byte {
	n := d.u32()
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: snapshot marker field of %d bytes, %d left", ErrCorrupt, n, len(d.b))
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) unmarshal(b []byte, m proto.Message) {
	if d.err != nil {
		return
	}
	if err := proto.Unmarshal(b, m); err != nil {
		d.err = fmt.Errorf("%w: snapshot marker: %v", ErrCorrupt, err)
	}
}

func decodeMarker(p []byte) (marker, error) {
	d := &decoder{b: p}
	m := marker{snap: &pb.SnapshotMetadata{}}
	d.unmarshal(d.blob(), m.snap)
	if hs := d.blob(); len(hs) > 0 {
		m.hs = &pb.HardState{}
		d.unmarshal(hs, m.hs)
	}
	k := d.u32()
	// Each entry takes at least its 4-byte length, so k is bounded by what
	// is left before anything is allocated for it.
	if d.err == nil && uint64(k) > uint64(len(d.b))/4 {
		d.err = fmt.Errorf("%w: snapshot marker claims %d entries in %d bytes", ErrCorrupt, k, len(d.b))
	}
	for i := uint32(0); i < k && d.err == nil; i++ {
		e := &pb.Entry{}
		d.unmarshal(d.blob(), e)
		m.entries = append(m.entries, e)
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes after snapshot marker", ErrCorrupt, len(d.b))
	}
	return m, d.err
}

// errTorn marks a record that is incomplete or fails its CRC: at the tail
// of the last segment it is a torn write, elsewhere damage.
var errTorn = errors.New("torn record")

// readRecord parses the record at the start of b, returning its type,
// payload and total length.
func readRecord(b []byte) (typ byte, payload []byte, n int, err error) {
	if len(b) < headerLen {
		return 0, nil, 0, errTorn
	}
	size := binary.BigEndian.Uint32(b[0:4])
	if size > MaxRecordBytes || uint64(size) > uint64(len(b)-headerLen) {
		return 0, nil, 0, errTorn
	}
	typ = b[8]
	payload = b[headerLen : headerLen+int(size)]
	crc := crc32.Update(crc32.Update(0, castagnoli, []byte{typ}), castagnoli, payload)
	if crc != binary.BigEndian.Uint32(b[4:8]) {
		return 0, nil, 0, errTorn
	}
	if typ < recEntry || typ > recSnapshot {
		// A record with a good CRC and an unknown type was written by
		// something else: never a torn write.
		return 0, nil, 0, fmt.Errorf("%w: unknown record type %d", ErrCorrupt, typ)
	}
	return typ, payload, headerLen + int(size), nil
}
