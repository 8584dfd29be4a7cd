//go:build amd64 || arm64

package middleware

import (
	"testing"
	"unsafe"
)

// TestStateSizeClasses keeps each layout of a request's one allocation
// within the size class it was planned for (see reqState): a field added
// to the state, or a Go release whose http.Request grows, moves every
// request to a larger class, which this says before a benchmark does.
// An object with pointers of more than 512 bytes carries an 8-byte
// header in its allocation, so the layouts above 512 leave room for it.
func TestStateSizeClasses(t *testing.T) {
	const header = 8
	for _, tt := range []struct {
		name        string
		size, class uintptr
	}{
		{"reqState", unsafe.Sizeof(reqState{}), 512},
		{"countedState", unsafe.Sizeof(countedState{}) + header, 576},
		{"cappedState", unsafe.Sizeof(cappedState{}) + header, 640},
		{"cappedCountedState", unsafe.Sizeof(cappedCountedState{}) + header, 704},
		{"meteredState", unsafe.Sizeof(meteredState{}) + header, 768},
		{"meteredCappedState", unsafe.Sizeof(meteredCappedState{}) + header, 896},
	} {
		if tt.size > tt.class {
			t.Errorf("%s needs %d bytes, more than its size class of %d", tt.name, tt.size, tt.class)
		}
	}
}
