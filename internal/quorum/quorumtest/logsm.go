package quorumtest

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/gregor-broker/gregor/internal/quorum"
)

// LogSM is a state machine that keeps every entry it applied; its snapshot
// is that list. It lets the Sim check that a restored snapshot holds exactly
// the committed history. It is safe for concurrent use, so a test may read
// it while a Node applies.
type LogSM struct {
	mu       sync.Mutex
	entries  []quorum.Entry
	restored quorum.EntryID
}

// NewLogSM returns an empty LogSM.
func NewLogSM() *LogSM { return &LogSM{} }

func (m *LogSM) Apply(e quorum.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.entries); n > 0 && e.Index <= m.entries[n-1].Index || e.Index <= m.restored.Index {
		return fmt.Errorf("logsm: entry %v applied out of order", e.EntryID)
	}
	m.entries = append(m.entries, quorum.Entry{EntryID: e.EntryID, Data: slices.Clone(e.Data)})
	return nil
}

// Entries lists what was applied (or restored), in index order.
func (m *LogSM) Entries() []quorum.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.entries)
}

// Data lists the data of what was applied, in order.
func (m *LogSM) Data() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, len(m.entries))
	for i, e := range m.entries {
		out[i] = string(e.Data)
	}
	return out
}

// Snapshot encodes the entries: u32 count, then per entry u64 index, u64
// term, u32 length, data.
func (m *LogSM) Snapshot() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := binary.BigEndian.AppendUint32(nil, uint32(len(m.entries)))
	for _, e := range m.entries {
		b = binary.BigEndian.AppendUint64(b, e.Index)
		b = binary.BigEndian.AppendUint64(b, e.Term)
		b = binary.BigEndian.AppendUint32(b, uint32(len(e.Data)))
		b = append(b, e.Data...)
	}
	return b, nil
}

func (m *LogSM) Restore(id quorum.EntryID, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries, m.restored = nil, id
	if len(data) == 0 {
		return nil
	}
	if len(data) < 4 {
		return fmt.Errorf("logsm: snapshot of %d bytes", len(data))
	}
	n := binary.BigEndian.Uint32(data)
	data = data[4:]
	for range n {
		if len(data) < 20 {
			return fmt.Errorf("logsm: truncated snapshot")
		}
		e := quorum.Entry{EntryID: quorum.EntryID{Index: binary.BigEndian.Uint64(data), Term: binary.BigEndian.Uint64(data[8:])}}
		l := binary.BigEndian.Uint32(data[16:])
		data = data[20:]
		if uint64(l) > uint64(len(data)) {
			return fmt.Errorf("logsm: truncated snapshot")
		}
		e.Data = slices.Clone(data[:l])
		data = data[l:]
		if e.Index > id.Index {
			return fmt.Errorf("logsm: snapshot at %v holds entry %v", id, e.EntryID)
		}
		m.entries = append(m.entries, e)
	}
	return nil
}

// Lookup returns the data of entry id, or nil if the state does not hold it.
func (m *LogSM) Lookup(id quorum.EntryID) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := slices.BinarySearchFunc(m.entries, id.Index, func(e quorum.Entry, idx uint64) int { return cmp.Compare(e.Index, idx) })
	if !ok || m.entries[i].Term != id.Term {
		return nil
	}
	return m.entries[i].Data
}
