package cow

import (
	"sync"
	"testing"
)

func TestMap(t *testing.T) {
	var m Map[string, int]
	if _, ok := m.Get("a"); ok {
		t.Fatal("the zero Map holds a value")
	}
	if v := m.Add("a", 1); v != 1 {
		t.Fatalf("Add to a map of bound 0 = %d, want 1 back", v)
	}
	if m.Len() != 0 {
		t.Fatal("a map of bound 0 kept a value")
	}
	m.SetBound(2)
	if v := m.Add("a", 1); v != 1 || m.Len() != 1 {
		t.Fatalf("Add(a, 1) = %d, len %d", v, m.Len())
	}
	if v := m.Add("a", 9); v != 1 {
		t.Fatalf("a second Add(a) = %d, want the first value, 1", v)
	}
	m.Add("b", 2)
	if v, ok := m.Get("b"); !ok || v != 2 {
		t.Fatalf("Get(b) = %d, %v", v, ok)
	}
	// Past the bound the map starts afresh: c is kept, a and b go.
	if v := m.Add("c", 3); v != 3 || m.Len() != 1 {
		t.Fatalf("Add past the bound = %d, len %d; want 3, and the map afresh with c alone", v, m.Len())
	}
	if v, ok := m.Get("c"); !ok || v != 3 {
		t.Fatalf("Get(c) = %d, %v; want the value added past the bound", v, ok)
	}
	if _, ok := m.Get("a"); ok {
		t.Fatal("a value from before the map started afresh is still there")
	}
}

// TestMapConcurrent: writers racing to add each key, each its own value,
// under -race: every writer gets back the one value kept (the first
// writer's), and every reader after finds it.
func TestMapConcurrent(t *testing.T) {
	var m Map[int, int]
	m.SetBound(1000)
	var got [4][200]int
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				got[w][i] = m.Add(i, i*10+w)
				if v, ok := m.Get(i); !ok || v != got[w][i] {
					t.Errorf("writer %d: Get(%d) = %d, %v; Add returned %d", w, i, v, ok, got[w][i])
				}
			}
		}()
	}
	wg.Wait()
	for i := range 200 {
		v, ok := m.Get(i)
		if !ok || v/10 != i {
			t.Fatalf("Get(%d) = %d, %v", i, v, ok)
		}
		for w := range 4 {
			if got[w][i] != v {
				t.Fatalf("writer %d: Add(%d) returned %d, the map holds %d: two values handed out for one key", w, i, got[w][i], v)
			}
		}
	}
	if m.Len() != 200 {
		t.Fatalf("len %d, want 200", m.Len())
	}
}

// BenchmarkGet: a read takes no lock and allocates nothing.
func BenchmarkGet(b *testing.B) {
	var m Map[string, int]
	m.SetBound(64)
	for i := range 64 {
		m.Add(string(rune('a'+i%26))+string(rune('A'+i/26)), i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := m.Get("cB"); !ok {
				b.Fatal("missing")
			}
		}
	})
}
