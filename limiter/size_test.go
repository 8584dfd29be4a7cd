package limiter

import (
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
