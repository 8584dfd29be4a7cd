package limiter

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestMemShardSize keeps each shard on cache lines of its own, so that two
// cores locking neighbouring shards do not contend for one line.
func TestMemShardSize(t *testing.T) {
	if got := unsafe.Sizeof(memShard{}); got%64 != 0 {
		t.Fatalf("memShard is %d bytes, want a multiple of 64", got)
	}
}

// TestDecisionHasNoPadding: a Decision is copied on every request's path
// and kept whole in the middleware's per-request state, whose allocation
// is sized to a size class (middleware's TestStateSizeClasses); a field
// placed where padding follows it costs every request a word.
func TestDecisionHasNoPadding(t *testing.T) {
	typ := reflect.TypeFor[Decision]()
	var fields uintptr
	for i := range typ.NumField() {
		fields += typ.Field(i).Type.Size()
	}
	if typ.Size() != fields {
		t.Fatalf("Decision is %d bytes, its fields %d: %d bytes of padding", typ.Size(), fields, typ.Size()-fields)
	}
}
