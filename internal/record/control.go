package record

import (
	"encoding/binary"
	"fmt"
)

// ControlType is a control record's type (Kafka's ControlRecordType), the
// second int16 of its key.
type ControlType int16

// Control record types. Gregor writes only transaction markers; any other
// type read from a log is kept and passed on as it is.
const (
	ControlAbort   ControlType = 0
	ControlCommit  ControlType = 1
	ControlUnknown ControlType = -1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("control(%d)", int16(t))
}

// Marker is a transaction marker (Kafka's EndTransactionMarker): the control
// record that commits or aborts one producer's transaction on a partition.
type Marker struct {
	Type             ControlType
	CoordinatorEpoch int32
}

// markerValueSize is the marker value: int16 version 0, int32 coordinator
// epoch. Kafka refuses shorter values.
const markerValueSize = 6

// ParseControl reads the type of a control batch's first record, and, for a
// transaction marker, the coordinator epoch from its value. A control batch
// with no record (the cleaner may empty one) is ControlUnknown with a nil
// error; a marker value shorter than Kafka's 6 bytes is ErrCorrupt (Kafka's
// EndTransactionMarker.deserialize throws on it too). maxOut caps
// decompression; control batches are written uncompressed.
func ParseControl(batch []byte, maxOut int) (Marker, error) {
	m := Marker{Type: ControlUnknown, CoordinatorEpoch: -1}
	err := Iterate(batch, maxOut, func(r *Record) error {
		if len(r.Key) < 4 {
			return fmt.Errorf("%w: control record key of %d bytes", ErrCorrupt, len(r.Key))
		}
		m.Type = ControlType(int16(binary.BigEndian.Uint16(r.Key[2:])))
		if m.Type != ControlAbort && m.Type != ControlCommit {
			return errStopIteration
		}
		if len(r.Value) < markerValueSize {
			return fmt.Errorf("%w: transaction marker value of %d bytes", ErrCorrupt, len(r.Value))
		}
		m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
		return errStopIteration
	})
	if err == errStopIteration {
		err = nil
	}
	return m, err
}

var errStopIteration = fmt.Errorf("stop")

// MarkerSpec describes a transaction marker batch to build.
type MarkerSpec struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	Timestamp        int64
}

// BuildMarker encodes a transaction marker as Kafka's
// MemoryRecords.withEndTransactionMarker does: an uncompressed v2 batch with
// the transactional and control attributes, base sequence -1, the producer's
// id and epoch, and exactly one record whose key is {int16 0, int16 type}
// and whose value is {int16 0, int32 coordinator epoch}. Offsets and the
// partition leader epoch are the appender's to set.
func BuildMarker(s MarkerSpec) []byte {
	typ := ControlAbort
	if s.Commit {
		typ = ControlCommit
	}
	var key [4]byte
	binary.BigEndian.PutUint16(key[2:], uint16(typ))
	var val [markerValueSize]byte
	binary.BigEndian.PutUint32(val[2:], uint32(s.CoordinatorEpoch))
	b, err := Build(&BatchSpec{Transactional: true, Control: true, ProducerID: s.ProducerID,
		ProducerEpoch: s.ProducerEpoch, BaseSequence: NoSequence,
		Records: []BuildRecord{{Timestamp: s.Timestamp, Key: key[:], Value: val[:]}}})
	if err != nil {
		panic(fmt.Sprintf("record: building a marker: %v", err)) // one fixed record: cannot fail
	}
	return b
}
