package coord

import "testing"

func TestPartitionFor(t *testing.T) {
	for _, c := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"", 50, 0},
		{"hello", 50, 99162322 % 50},                  // Java: "hello".hashCode() == 99162322
		{"polygenelubricants", 50, 0},                 // hashCode is Integer.MIN_VALUE; Utils.abs gives 0
		{"é", 50, 233 % 50},                           // one UTF-16 unit
		{"\U0001F600", 50, (31*0xD83D + 0xDE00) % 50}, // a surrogate pair
		{"Aa", 7, 2112 % 7},                           // "Aa" and "BB" collide in Java
		{"BB", 7, 2112 % 7},
	} {
		if got := PartitionFor(c.group, c.n); got != c.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", c.group, c.n, got, c.want)
		}
	}
	if h := javaStringHashCode("polygenelubricants"); h != -1<<31 {
		t.Fatalf("hash %d", h)
	}
	// A negative hash: abs, not a negative modulus.
	if h := javaStringHashCode("consumer-group-17"); h < 0 {
		if got := PartitionFor("consumer-group-17", 50); got != (-h)%50 {
			t.Fatalf("negative hash partition %d", got)
		}
	}
}
