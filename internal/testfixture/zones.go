package testfixture

import (
	"archive/zip"
	"errors"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Zones returns the names of every zone of Go's own copy of the tz
// database ($GOROOT/lib/time/zoneinfo.zip, the data time/tzdata
// embeds), sorted: the same zones on every machine, whatever the system
// has (598 with Go 1.26), for tests and benchmarks of customers spread
// over every zone.
func Zones() ([]string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, errors.New("testfixture: go env GOROOT: " + err.Error())
	}
	zr, err := zip.OpenReader(filepath.Join(strings.TrimSpace(string(out)), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	names := make([]string, 0, len(zr.File))
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if len(names) < 300 {
		return nil, errors.New("testfixture: fewer than 300 zones in zoneinfo.zip")
	}
	sort.Strings(names)
	return names, nil
}
