package calendar

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/internal/cow"
)

// MaxZoneName bounds a zone's name, which becomes part of policy IDs and
// storage keys: the tz database's longest is 32 bytes.
const MaxZoneName = 64

// maxZones bounds the zones Zone keeps loaded: the tz database has about
// 600 names, so every real one fits, and names that load nothing are
// never kept.
const maxZones = 1024

// zones are the locations Zone loaded, by name.
var zones = func() *cow.Map[string, *time.Location] {
	m := new(cow.Map[string, *time.Location])
	m.SetBound(maxZones)
	return m
}()

// ErrUnknownZone reports a zone name Zone could not load.
var ErrUnknownZone = errors.New("unknown time zone")

// checkZoneName reports why name is not a name of the tz database, one
// spelling per zone: segments separated by single slashes, each a capital
// letter followed by letters, digits and _-+ ("America/Port-au-Prince",
// "Etc/GMT+5"), as every name of the database is. So no path can pass (no
// '.', no leading, doubled or trailing '/'), nor a second spelling of a
// zone (Europe//Paris, ./Europe/Paris), nor the files beside the zones
// that LoadLocation would read as zones (localtime, the machine's own;
// posixrules; the posix/ and right/ copies). "Local", the machine's own
// zone, which replicas may not share, is refused by name.
func checkZoneName(name string) error {
	switch {
	case name == "" || len(name) > MaxZoneName:
		return fmt.Errorf("zone name %q must be 1 to %d characters", name, MaxZoneName)
	case name == "Local":
		return fmt.Errorf("zone %q is the machine's own zone, which replicas may not share: name the zone, as \"Europe/Paris\"", name)
	}
	for seg := range strings.SplitSeq(name, "/") {
		if seg == "" || seg[0] < 'A' || seg[0] > 'Z' {
			return fmt.Errorf("zone name %q is not a name of the tz database (segments start with a capital letter, as in \"America/New_York\")", name)
		}
		for i := 1; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '+') {
				return fmt.Errorf("zone name %q has character %q (allowed: A-Z a-z 0-9 _-+ and / between segments, as in the tz database's names)", name, c)
			}
		}
	}
	return nil
}

// Zone returns the location of the tz database's zone name ("UTC",
// "Europe/Paris"), loaded once and kept: a name that comes with a
// request (a customer's zone) is checked before anything is loaded
// (checkZoneName), so it can name no file and no zone twice, and only
// names that load a zone are kept, at most 1024 of them. An error wraps ErrUnknownZone.
// The tz database is the system's, or the one a program embeds by
// importing time/tzdata.
func Zone(name string) (*time.Location, error) {
	if loc, ok := zones.Get(name); ok {
		return loc, nil
	}
	if err := checkZoneName(name); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnknownZone, err)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrUnknownZone, name, err)
	}
	return zones.Add(name, loc), nil
}
