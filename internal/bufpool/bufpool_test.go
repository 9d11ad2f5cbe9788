package bufpool

import "testing"

func TestPoolSizesAndBound(t *testing.T) {
	const minSize, maxSize, maxHeld = 16 << 10, 16 << 20, 32 << 20
	p := New(minSize, maxSize, maxHeld)
	for _, n := range []int{0, 1, minSize, minSize + 1, 1 << 20, 1<<20 + 1, maxSize} {
		b := p.Get(n)
		if len(b) != 0 || cap(b) < n || cap(b) < minSize {
			t.Fatalf("Get(%d): len %d cap %d", n, len(b), cap(b))
		}
		if c := cap(b); c&(c-1) != 0 {
			t.Fatalf("Get(%d): capacity %d is not a pooled size", n, c)
		}
	}
	if b := p.Get(maxSize + 1); cap(b) != maxSize+1 {
		t.Fatalf("an oversized Get got capacity %d", cap(b))
	}
	p.Put(make([]byte, 0, maxSize*2))
	if p.Held() != 0 {
		t.Fatalf("pool kept a buffer above its maximum size (%d bytes held)", p.Held())
	}

	// A returned buffer is handed out again, stale contents and all.
	b := p.Get(100 << 10)
	b = append(b, "stale"...)
	p.Put(b)
	if again := p.Get(90 << 10); &again[:1][0] != &b[0] || string(again[:5]) != "stale" {
		t.Fatalf("a pooled buffer of the right size was not reused as it was")
	}

	// Foreign sizes are dropped; the pool keeps at most maxHeld bytes.
	p.Put(make([]byte, 0, 100<<10))
	if p.Held() != 0 {
		t.Fatalf("pool kept a buffer that is not a pooled size (%d bytes held)", p.Held())
	}
	var bufs [][]byte
	for range 2 * maxHeld / (1 << 20) {
		bufs = append(bufs, p.Get(1<<20))
	}
	for _, b := range bufs {
		p.Put(b)
	}
	if p.Held() != maxHeld {
		t.Fatalf("pool holds %d bytes, want its bound %d", p.Held(), maxHeld)
	}
}

// BenchmarkGetPut is the cost of taking and returning a pooled 8 MiB buffer
// (a large request frame): no allocation, no clearing.
func BenchmarkGetPut(b *testing.B) {
	p := New(1<<20, 128<<20, 64<<20)
	b.ReportAllocs()
	for b.Loop() {
		p.Put(p.Get(8 << 20))
	}
}
