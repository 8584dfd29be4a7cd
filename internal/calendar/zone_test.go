package calendar

import (
	"errors"
	"strings"
	"testing"
)

func TestZone(t *testing.T) {
	for _, tt := range []struct {
		name, want string // want: "" for a zone, else part of the error
	}{
		{"UTC", ""},
		{"Europe/Paris", ""},
		{"Asia/Kolkata", ""},
		{"America/New_York", ""},
		{"Pacific/Auckland", ""},
		{"", "1 to 64"},
		{"Local", "machine's own zone"},
		{"America/Port-au-Prince", ""},
		{"Etc/GMT+5", ""},
		{"America/Argentina/Buenos_Aires", ""},
		{"../../etc/passwd", "not a name of the tz database"},
		{"/etc/localtime", "not a name of the tz database"},
		{"Europe/Atlantis", "unknown time zone"},
		{"Europe/Paris\x00", "character"},
		// One spelling per zone: none of these may count apart from
		// Europe/Paris, nor load a file beside the zones.
		{"Europe//Paris", "not a name of the tz database"},
		{"./Europe/Paris", "not a name of the tz database"},
		{"Europe/./Paris", "not a name of the tz database"},
		{"Europe/Paris/", "not a name of the tz database"},
		{"Europe/Paris.", "character"},
		{"localtime", "not a name of the tz database"},
		{"posixrules", "not a name of the tz database"},
		{"posix/Europe/Paris", "not a name of the tz database"},
		{"right/Europe/Paris", "not a name of the tz database"},
		{"europe/paris", "not a name of the tz database"},
		{strings.Repeat("A", 65), "1 to 64"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := Zone(tt.name)
			switch {
			case tt.want == "" && (err != nil || loc.String() != tt.name):
				t.Fatalf("Zone(%q) = %v, %v; want the zone", tt.name, loc, err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrUnknownZone) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Zone(%q) = %v, %v; want ErrUnknownZone saying %q", tt.name, loc, err, tt.want)
			}
		})
	}
	a, _ := Zone("Europe/Paris")
	b, _ := Zone("Europe/Paris")
	if a != b {
		t.Fatal("a zone loaded twice: want one *time.Location, kept")
	}
}

// TestZoneKeepsOnlyZones: names that load nothing are not kept, so a
// flood of made-up names grows nothing.
func TestZoneKeepsOnlyZones(t *testing.T) {
	before := zones.Len()
	for i := range 2000 {
		if _, err := Zone("Nowhere/Place" + strings.Repeat("x", i%50)); err == nil {
			t.Fatal("a made-up zone loaded")
		}
	}
	if zones.Len() != before {
		t.Fatalf("zones kept %d, was %d: failed names were kept", zones.Len(), before)
	}
}
