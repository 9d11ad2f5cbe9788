package placement

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func brokers(n int, rack func(i int) string) []Broker {
	var out []Broker
	for i := 1; i <= n; i++ {
		out = append(out, Broker{ID: int32(i), Rack: rack(i)})
	}
	return out
}

func noRack(int) string { return "" }

// Leaders and replicas spread evenly; no partition holds a broker twice.
func TestPlaceSpreadsEvenly(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		rnd := rand.New(rand.NewPCG(seed, 1))
		got, err := Place(rnd, brokers(3, noRack), nil, 30, 3)
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		for _, r := range got {
			if len(r) != 3 || r[0] == r[1] || r[1] == r[2] || r[0] == r[2] {
				t.Fatalf("seed %d: assignment %v", seed, r)
			}
			leaders[r[0]]++
		}
		for b := int32(1); b <= 3; b++ {
			if leaders[b] != 10 {
				t.Fatalf("seed %d: leaders per broker %v, want 10 each", seed, leaders)
			}
		}
	}
}

// With three racks and RF 3 every partition has a replica in each rack,
// and with RF 2 never two in one rack.
func TestPlaceRackAware(t *testing.T) {
	bs := brokers(6, func(i int) string { return string(rune('a' + i%3)) })
	rackOf := map[int32]string{}
	for _, b := range bs {
		rackOf[b.ID] = b.Rack
	}
	for seed := uint64(0); seed < 50; seed++ {
		for _, rf := range []int{2, 3} {
			got, err := Place(rand.New(rand.NewPCG(seed, 2)), bs, nil, 12, rf)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range got {
				racks := map[string]bool{}
				for _, b := range r {
					racks[rackOf[b]] = true
				}
				if len(racks) != rf {
					t.Fatalf("seed %d rf %d: %v spans racks %v", seed, rf, r, racks)
				}
			}
		}
	}
}

// A fenced broker may hold a replica but never lead a new partition.
func TestPlaceFencedNeverFirst(t *testing.T) {
	bs := brokers(3, noRack)
	bs[1].Fenced = true
	for seed := uint64(0); seed < 50; seed++ {
		got, err := Place(rand.New(rand.NewPCG(seed, 3)), bs, nil, 9, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range got {
			if r[0] == 2 || !slices.Contains(r, 2) {
				t.Fatalf("seed %d: %v (broker 2 is fenced: a follower, never first)", seed, r)
			}
		}
	}
}

// Added partitions continue the topic's stripe: the leaders of the new
// partitions follow on from the last existing one.
func TestPlaceContinuesExisting(t *testing.T) {
	existing := [][]int32{{1, 2, 3}, {2, 3, 1}}
	got, err := Place(rand.New(rand.NewPCG(9, 9)), brokers(3, noRack), existing, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got[0][0] != 3 || got[1][0] != 1 || got[2][0] != 2 {
		t.Fatalf("added partitions %v: leaders should continue 3, 1, 2 after 1, 2", got)
	}
}

func TestPlaceErrors(t *testing.T) {
	fenced := brokers(2, noRack)
	fenced[0].Fenced, fenced[1].Fenced = true, true
	for _, c := range []struct {
		brokers []Broker
		rf      int
		msg     string
	}{
		{brokers(3, noRack), 0, "Invalid replication factor 0: the replication factor must be positive."},
		{brokers(3, noRack), 4, "The target replication factor of 4 cannot be reached because only 3 broker(s) are registered."},
		{fenced, 1, "All brokers are currently fenced."},
	} {
		_, err := Place(rand.New(rand.NewPCG(1, 1)), c.brokers, nil, 1, c.rf)
		if !errors.Is(err, kerr.InvalidReplicationFactor) || err.Error() != kerr.InvalidReplicationFactor.Error()+": "+c.msg {
			t.Fatalf("rf %d: %v, want INVALID_REPLICATION_FACTOR %q", c.rf, err, c.msg)
		}
	}
}
