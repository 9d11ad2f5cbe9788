package controller

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// TopicID is a topic's 16-byte UUID.
type TopicID [16]byte

// NewTopicID returns a random version-4 UUID that is not the zero or
// metadata topic id.
func NewTopicID() TopicID {
	var id TopicID
	for id == (TopicID{}) || id == (TopicID{0: 0, 15: 1}) {
		if _, err := rand.Read(id[:]); err != nil {
			panic(err)
		}
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
	}
	return id
}

// String is Kafka's base64url (no padding) form.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func (id TopicID) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(id[:])), nil }

func (id *TopicID) UnmarshalText(b []byte) error {
	n, err := hex.Decode(id[:], b)
	if err == nil && n != 16 {
		err = fmt.Errorf("topic id of %d bytes", n)
	}
	return err
}

// Topic is one topic's metadata.
type Topic struct {
	Name       string            `json:"name"`
	ID         TopicID           `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
	Internal   bool              `json:"internal,omitempty"`
}

// Image is an immutable snapshot of the cluster metadata.
type Image struct {
	ClusterID     string            `json:"cluster_id"`
	NodeID        int32             `json:"node_id"`
	Topics        map[string]*Topic `json:"topics"`
	BrokerConfigs map[string]string `json:"broker_configs,omitempty"`
	// NodeConfigs are the dynamic broker configs of this node alone (the
	// broker resource named by node.id), above BrokerConfigs.
	NodeConfigs map[string]string `json:"node_configs,omitempty"`
	// Epoch counts metadata changes (used as the controller epoch / metadata version).
	Epoch int64 `json:"epoch"`
	// NextProducerIDBlock is the first producer id not yet handed out in a block.
	NextProducerIDBlock int64 `json:"next_producer_id_block"`

	// byID indexes Topics by id; built by index just before the image is
	// published (images are not changed after that), nil on a clone.
	byID map[TopicID]*Topic
}

// Topic returns the named topic or nil.
func (im *Image) Topic(name string) *Topic { return im.Topics[name] }

// TopicByID finds a topic by id: a map lookup on a published image (fetch
// and produce v13 name topics by id on every request).
func (im *Image) TopicByID(id TopicID) *Topic {
	if im.byID != nil {
		return im.byID[id]
	}
	for _, t := range im.Topics {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// TopicNames returns the topic names in order.
func (im *Image) TopicNames() []string {
	out := make([]string, 0, len(im.Topics))
	for n := range im.Topics {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// index builds byID; called once per image, before it is published.
func (im *Image) index() {
	im.byID = make(map[TopicID]*Topic, len(im.Topics))
	for _, t := range im.Topics {
		im.byID[t.ID] = t
	}
}

func (im *Image) clone() *Image {
	c := *im
	c.byID = nil
	c.Topics = make(map[string]*Topic, len(im.Topics))
	for k, v := range im.Topics {
		t := *v
		t.Configs = cloneMap(v.Configs)
		c.Topics[k] = &t
	}
	c.BrokerConfigs = cloneMap(im.BrokerConfigs)
	c.NodeConfigs = cloneMap(im.NodeConfigs)
	return &c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (im *Image) marshal() ([]byte, error) { return json.MarshalIndent(im, "", "  ") }

func unmarshalImage(b []byte) (*Image, error) {
	var im Image
	if err := json.Unmarshal(b, &im); err != nil {
		return nil, err
	}
	if im.Topics == nil {
		im.Topics = map[string]*Topic{}
	}
	return &im, nil
}
