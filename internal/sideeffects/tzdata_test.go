package sideeffects

import (
	"slices"
	"strings"
	"testing"
)

// TestLibraryEmbedsNoTzdata keeps time/tzdata, 450 KB of zones, out of
// every library package: calendar rates load zones with time.LoadLocation,
// and a program that needs them embedded (a minimal container image has
// no tz database) imports time/tzdata in its main package, as
// example/plans does. A program that loads no zone must not pay for it.
func TestLibraryEmbedsNoTzdata(t *testing.T) {
	for _, lp := range libraryPackages(t) {
		if deps := goList(t, lp.module, "-deps", lp.path); slices.Contains(deps, "time/tzdata") {
			t.Errorf("%s depends on time/tzdata", strings.TrimPrefix(lp.path, module+"/"))
		}
	}
}
