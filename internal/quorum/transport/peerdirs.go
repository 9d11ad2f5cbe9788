package transport

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// PeerDirectories remembers the directory id each peer first connected
// with, durably, so that a peer whose metadata directory was wiped and
// re-formatted (a new directory id, and no memory of its votes) is refused.
// The file has one "node-id directory-id" line per peer.
type PeerDirectories struct {
	fs   vfs.FS
	path string
	mu   sync.Mutex
	ids  map[int32]string
}

// OpenPeerDirectories loads path (missing: nothing known yet). Put it in
// the quorum's directory, so re-formatting that directory forgets it too.
func OpenPeerDirectories(fs vfs.FS, path string) (*PeerDirectories, error) {
	p := &PeerDirectories{fs: fs, path: path, ids: map[int32]string{}}
	data, err := vfs.ReadFile(fs, path)
	if vfs.IsNotExist(err) {
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		id, err := strconv.ParseInt(f[0], 10, 32)
		if len(f) != 2 || err != nil {
			return nil, fmt.Errorf("transport: %s: bad line %q", path, sc.Text())
		}
		p.ids[int32(id)] = f[1]
	}
	return p, nil
}

// Known is the directory id first seen from node, "" if none was.
func (p *PeerDirectories) Known(node int32) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[node]
}

// Check accepts dirID for node if it is the one first seen from node, or
// if node was never seen (then it is recorded durably before Check returns).
func (p *PeerDirectories) Check(node int32, dirID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	known, ok := p.ids[node]
	if ok {
		if known != dirID {
			return fmt.Errorf("node %d came back with metadata directory %s, not %s: its directory was wiped and re-formatted, "+
				"so it may have forgotten votes it cast; remove it from the quorum and add it back under a new node id", node, dirID, known)
		}
		return nil
	}
	p.ids[node] = dirID
	var b bytes.Buffer
	for n, d := range p.ids {
		fmt.Fprintf(&b, "%d %s\n", n, d)
	}
	if err := vfs.WriteFileAtomic(p.fs, p.path, b.Bytes()); err != nil {
		delete(p.ids, node)
		return fmt.Errorf("record directory of node %d: %w", node, err)
	}
	return nil
}
