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
	if v := m.Add("c", 3); v != 3 || m.Len() != 2 {
		t.Fatalf("Add past the bound = %d, len %d; want 3 back, 2 kept", v, m.Len())
	}
	if _, ok := m.Get("c"); ok {
		t.Fatal("a value past the bound was kept")
	}
	if v, ok := m.Get("b"); !ok || v != 2 {
		t.Fatalf("Get(b) = %d, %v", v, ok)
	}
}

// TestMapConcurrent: readers and writers at once, under -race; every
// value a writer added is found, once, by every reader after.
func TestMapConcurrent(t *testing.T) {
	var m Map[int, int]
	m.SetBound(1000)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if got := m.Add(i, i*10); got != i*10 {
					t.Errorf("writer %d: Add(%d) = %d", w, i, got)
				}
				if v, ok := m.Get(i); !ok || v != i*10 {
					t.Errorf("writer %d: Get(%d) = %d, %v", w, i, v, ok)
				}
			}
		}()
	}
	wg.Wait()
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
