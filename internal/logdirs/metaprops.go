package logdirs

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/magiconair/properties"
)

// MetaPropertiesFile is Kafka's per-log-dir identity file.
const MetaPropertiesFile = "meta.properties"

// MetaProperties is the content of one log dir's meta.properties. Version 1
// (KRaft) is what Gregor writes; version 0 files (ZooKeeper-era Kafka, with
// broker.id) are read so that they can be reported.
type MetaProperties struct {
	Version     int
	ClusterID   string
	NodeID      int32  // -1 when absent
	DirectoryID string // "" when absent
}

// ParseMetaProperties reads a meta.properties file the way Kafka's
// MetaProperties.Builder does: version defaults to 0, a v1 file must name
// cluster.id and node.id, and v0 spells node.id broker.id.
func ParseMetaProperties(data []byte) (MetaProperties, error) {
	l := properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	p, err := l.LoadBytes(data)
	if err != nil {
		return MetaProperties{}, err
	}
	m := MetaProperties{NodeID: -1}
	if v, ok := p.Get("version"); ok {
		if m.Version, err = strconv.Atoi(strings.TrimSpace(v)); err != nil || m.Version < 0 || m.Version > 1 {
			return m, fmt.Errorf("unknown meta.properties version %q", v)
		}
	}
	m.ClusterID, _ = p.Get("cluster.id")
	m.DirectoryID, _ = p.Get("directory.id")
	idKey := "node.id"
	if m.Version == 0 {
		idKey = "broker.id"
	}
	if v, ok := p.Get(idKey); ok {
		id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || id < 0 {
			return m, fmt.Errorf("%s %q is not a non-negative integer", idKey, v)
		}
		m.NodeID = int32(id)
	}
	if m.Version == 1 && m.ClusterID == "" {
		return m, fmt.Errorf("cluster.id was not specified in the v1 file")
	}
	if m.Version == 1 && m.NodeID < 0 {
		return m, fmt.Errorf("node.id was not specified in the v1 file")
	}
	return m, nil
}

// Marshal writes a version 1 file in the layout Kafka writes.
func (m MetaProperties) Marshal() []byte {
	var b strings.Builder
	b.WriteString("#\n#Written by gregor\n")
	fmt.Fprintf(&b, "cluster.id=%s\n", m.ClusterID)
	if m.DirectoryID != "" {
		fmt.Fprintf(&b, "directory.id=%s\n", m.DirectoryID)
	}
	fmt.Fprintf(&b, "node.id=%d\nversion=1\n", m.NodeID)
	return []byte(b.String())
}

// String is the file's settings on one line.
func (m MetaProperties) String() string {
	s := fmt.Sprintf("version=%d cluster.id=%s node.id=%d", m.Version, m.ClusterID, m.NodeID)
	if m.DirectoryID != "" {
		s += " directory.id=" + m.DirectoryID
	}
	return s
}

// RandomUUID returns a random id in Kafka's Uuid text form (base64url without
// padding, 22 characters), never one Kafka reserves: not starting with '-'
// (it would read as a command-line flag) and not among the 100 ids whose
// high 64 bits are zero (Kafka's reserved directory ids, the zero id and the
// metadata topic id among them).
func RandomUUID() string {
	var id [16]byte
	for {
		if _, err := rand.Read(id[:]); err != nil {
			panic(err)
		}
		if binary.BigEndian.Uint64(id[:8]) == 0 && binary.BigEndian.Uint64(id[8:]) < 100 {
			continue
		}
		if s := base64.RawURLEncoding.EncodeToString(id[:]); s[0] != '-' {
			return s
		}
	}
}

// ValidateClusterID checks that s is a Kafka Uuid string, as kafka-storage
// format does with --cluster-id.
func ValidateClusterID(s string) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil && len(b) != 16 {
		err = fmt.Errorf("it decodes to %d bytes, not 16", len(b))
	}
	if err != nil {
		//lint:ignore ST1005 Kafka's message, word for word
		return fmt.Errorf("Cluster ID string %s does not appear to be a valid UUID: %v", s, err)
	}
	return nil
}
