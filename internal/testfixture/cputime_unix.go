//go:build unix

package testfixture

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time, user and system, the process has used.
// Per operation it is a steadier figure than ns/op on a machine other work
// shares: time spent descheduled does not count.
func CPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
