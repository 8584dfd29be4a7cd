package cache

import (
	"sync"
	"testing"
)

type plan struct{ name string }

// resolved is a value that says which key and string it was made for,
// as a resolution names its zone.
type resolved struct {
	plan *plan
	zone string
}

// putUntil puts v for k and str until Get finds it: Put writes one call
// in putEvery, at random.
func putUntil(t *testing.T, r *Recent[plan, resolved], k *plan, str string, v *resolved) {
	t.Helper()
	for range 100 * putEvery {
		r.Put(k, str, v)
		if r.Get(k, str) == v {
			return
		}
	}
	t.Fatalf("Get(%s, %s) never found what Put kept, in %d Puts", k.name, str, 100*putEvery)
}

func TestRecentGetPut(t *testing.T) {
	r := NewRecent[plan, resolved](64)
	a, b := &plan{"a"}, &plan{"a"} // equal contents, two addresses
	if v := r.Get(a, "Europe/Paris"); v != nil {
		t.Fatalf("an empty Recent holds %+v", v)
	}
	if v := r.Get(nil, ""); v != nil {
		t.Fatalf("an empty Recent holds %+v for nil", v)
	}
	va := &resolved{a, "Europe/Paris"}
	putUntil(t, r, a, "Europe/Paris", va)
	if v := r.Get(b, "Europe/Paris"); v != nil {
		t.Fatalf("Get of another address of equal contents = %+v, want nil: a Recent finds by address", v)
	}
	// Another zone of the same plan may share a's slot or not: the
	// value names its zone, which the caller checks.
	if v := r.Get(a, "Asia/Tokyo"); v != nil && v.zone == "Asia/Tokyo" {
		t.Fatalf("Get(a, Asia/Tokyo) = %+v, never put", v)
	}
	vt := &resolved{a, "Asia/Tokyo"}
	putUntil(t, r, a, "Asia/Tokyo", vt)
}

func TestNewRecentWantsAPowerOfTwo(t *testing.T) {
	for _, n := range []int{0, -1, 3, 1000} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewRecent(%d) did not panic", n)
				}
			}()
			NewRecent[plan, resolved](n)
		}()
	}
}

// TestRecentNeverTorn: readers racing writers of one slot (one string,
// two slots in all) never get a value put for another key: a key and
// its value are read as one Put wrote them, or not at all.
func TestRecentNeverTorn(t *testing.T) {
	r := NewRecent[plan, resolved](2)
	keys := make([]*plan, 64)
	vals := make([]*resolved, len(keys))
	for i := range keys {
		keys[i] = &plan{name: string(rune('a' + i%26))}
		vals[i] = &resolved{keys[i], "z"}
	}
	var wg, started sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		started.Add(1)
		wg.Go(func() {
			started.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := i % len(keys)
				r.Put(keys[k], "z", vals[k])
			}
		})
	}
	started.Wait()
	// Until the readers have found 10,000 values, or read 20,000,000
	// times: without the race detector a fixed count of reads may end
	// before a writer has run.
	found := 0
	for i := 0; found < 10_000 && i < 20_000_000; i++ {
		k := keys[i%len(keys)]
		if v := r.Get(k, "z"); v != nil {
			found++
			if v.plan != k {
				close(stop)
				wg.Wait()
				t.Fatalf("Get(%p) = a value put for %p: torn", k, v.plan)
			}
		}
	}
	close(stop)
	wg.Wait()
	if found == 0 {
		t.Fatal("no Get found its key: the race was not run")
	}
}
