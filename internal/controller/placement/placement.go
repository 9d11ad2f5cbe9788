// Package placement decides which brokers hold a new partition's replicas:
// Kafka's StripedReplicaPlacer, a pure function of the usable brokers, the
// topic's existing assignments and a random source.
//
// Replicas are spread over racks first and over brokers second: racks are
// visited round robin from an offset, brokers within a rack round robin
// from an offset of their own, and each partition starts one rack further
// on, which gives the striped pattern (racks A, B, C: A B C, B C A, C A B).
// Unfenced brokers are used before fenced ones, and a partition's first
// replica (its preferred leader) is always unfenced. Offsets start at random
// for a new topic; when partitions are added, they continue from where the
// topic's existing assignments left off. After as many partitions as there
// are unfenced brokers, racks and brokers are shuffled so assignments do not
// repeat.
//
// Constraints, as Kafka's errors (INVALID_REPLICATION_FACTOR): the
// replication factor is positive, at most the number of usable brokers, and
// some broker is unfenced.
package placement

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Broker is a broker placement may use: registered and not in controlled
// shutdown.
type Broker struct {
	ID     int32
	Rack   string // "" when broker.rack is not set
	Fenced bool
}

// brokerList is one rack's fenced or unfenced brokers, iterated round robin
// once per iteration epoch.
type brokerList struct {
	brokers       []int32
	index, offset int
	epoch         int
}

func (l *brokerList) initRandom(r *rand.Rand) {
	if len(l.brokers) > 0 {
		slices.Sort(l.brokers)
		l.offset = r.IntN(len(l.brokers))
	}
}

func (l *brokerList) initAfter(previous int) {
	if len(l.brokers) > 0 {
		slices.Sort(l.brokers)
		l.offset = (previous + 1) % len(l.brokers)
	}
}

// next is the next broker of this epoch, or -1 when all were returned.
func (l *brokerList) next(epoch int) int32 {
	if len(l.brokers) == 0 {
		return -1
	}
	if l.epoch != epoch {
		l.epoch, l.index = epoch, 0
		l.offset = (l.offset + 1) % len(l.brokers)
	}
	if l.index >= len(l.brokers) {
		return -1
	}
	b := l.brokers[(l.index+l.offset)%len(l.brokers)]
	l.index++
	return b
}

type rack struct{ fenced, unfenced brokerList }

// next prefers unfenced brokers.
func (r *rack) next(epoch int) int32 {
	if b := r.unfenced.next(epoch); b >= 0 {
		return b
	}
	return r.fenced.next(epoch)
}

type rackList struct {
	rnd             *rand.Rand
	racks           map[string]*rack
	names           []string // racks with an unfenced broker first, each group sorted
	total, unfenced int
	epoch, offset   int
}

func newRackList(rnd *rand.Rand, existing [][]int32, brokers []Broker) *rackList {
	rl := &rackList{rnd: rnd, racks: map[string]*rack{}}
	rackOf := map[int32]string{}
	for _, b := range brokers {
		rackOf[b.ID] = b.Rack
		rk := rl.racks[b.Rack]
		if rk == nil {
			rk = &rack{}
			rl.racks[b.Rack] = rk
			rl.names = append(rl.names, b.Rack)
		}
		if b.Fenced {
			rk.fenced.brokers = append(rk.fenced.brokers, b.ID)
		} else {
			rk.unfenced.brokers = append(rk.unfenced.brokers, b.ID)
			rl.unfenced++
		}
		rl.total++
	}
	// Map iteration order must not leak into the result: initialise racks
	// in name order.
	slices.Sort(rl.names)
	for _, name := range rl.names {
		rk := rl.racks[name]
		rk.fenced.initRandom(rnd)
		if prev, ok := previousBrokerOffset(rackOf, existing, name, rk); ok {
			rk.unfenced.initAfter(prev)
		} else {
			rk.unfenced.initRandom(rnd)
		}
	}
	if prev, ok := previousRackOffset(rackOf, existing, rl.names); ok {
		rl.offset = (prev + 1) % len(rl.names)
	} else if len(rl.names) > 0 {
		rl.offset = rnd.IntN(len(rl.names))
	}
	return rl
}

// previousRackOffset is the index of the rack of the last existing
// partition's first replica.
func previousRackOffset(rackOf map[int32]string, existing [][]int32, names []string) (int, bool) {
	if len(existing) == 0 || len(existing[len(existing)-1]) == 0 {
		return 0, false
	}
	name, ok := rackOf[existing[len(existing)-1][0]]
	if !ok {
		return 0, false
	}
	i := slices.Index(names, name)
	return i, i >= 0
}

// previousBrokerOffset is the position, among the rack's sorted unfenced
// brokers, of the last broker of this rack in the existing assignments.
func previousBrokerOffset(rackOf map[int32]string, existing [][]int32, name string, rk *rack) (int, bool) {
	sorted := slices.Sorted(slices.Values(rk.unfenced.brokers))
	for i := len(existing) - 1; i >= 0; i-- {
		for _, b := range existing[i] {
			if r, ok := rackOf[b]; ok && r == name {
				j := slices.Index(sorted, b)
				return j, j >= 0
			}
		}
	}
	return 0, false
}

func (rl *rackList) shuffle() {
	rl.rnd.Shuffle(len(rl.names), func(i, j int) { rl.names[i], rl.names[j] = rl.names[j], rl.names[i] })
	for _, name := range slices.Sorted(maps.Keys(rl.racks)) {
		rk := rl.racks[name]
		for _, l := range []*brokerList{&rk.fenced, &rk.unfenced} {
			rl.rnd.Shuffle(len(l.brokers), func(i, j int) { l.brokers[i], l.brokers[j] = l.brokers[j], l.brokers[i] })
		}
	}
}

// place returns one partition's replicas, its first one unfenced.
func (rl *rackList) place(rf int) []int32 {
	if rl.epoch == rl.unfenced && rl.unfenced > 1 {
		rl.shuffle()
		rl.epoch = 0
	}
	if rl.offset == len(rl.names) {
		rl.offset = 0
	}
	out := make([]int32, 0, rf)
	first := rl.offset
	for {
		if b := rl.racks[rl.names[first]].unfenced.next(rl.epoch); b >= 0 {
			out = append(out, b)
			break
		}
		first = (first + 1) % len(rl.names)
	}
	ri := rl.offset
	for len(out) < rf {
		b := int32(-1)
		for b < 0 {
			if ri == first {
				first = -1 // the first replica's rack gives no second one in this pass
			} else {
				b = rl.racks[rl.names[ri]].next(rl.epoch)
			}
			ri = (ri + 1) % len(rl.names)
		}
		out = append(out, b)
	}
	rl.epoch++
	rl.offset++
	return out
}

// Place assigns replicas to n new partitions with replication factor rf.
// existing are the topic's current assignments (empty for a new topic), so
// added partitions continue its stripe.
func Place(rnd *rand.Rand, brokers []Broker, existing [][]int32, n, rf int) ([][]int32, error) {
	if err := Check(brokers, rf); err != nil {
		return nil, err
	}
	brokers = slices.Clone(brokers)
	slices.SortFunc(brokers, func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })
	rl := newRackList(rnd, existing, brokers)
	out := make([][]int32, n)
	for i := range out {
		out[i] = rl.place(rf)
	}
	return out, nil
}

// Check reports, with Kafka's messages, whether rf replicas can be placed.
func Check(brokers []Broker, rf int) error {
	if rf <= 0 {
		return fmt.Errorf("%w: Invalid replication factor %d: the replication factor must be positive.",
			kerr.InvalidReplicationFactor, rf)
	}
	unfenced := 0
	for _, b := range brokers {
		if !b.Fenced {
			unfenced++
		}
	}
	if unfenced == 0 {
		return fmt.Errorf("%w: All brokers are currently fenced.", kerr.InvalidReplicationFactor)
	}
	if rf > len(brokers) {
		return fmt.Errorf("%w: The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
			kerr.InvalidReplicationFactor, rf, len(brokers))
	}
	return nil
}
