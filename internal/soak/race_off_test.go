//go:build !race

package soak

// raceDetector says whether the figures were taken under -race, which
// slows every request several times over.
const raceDetector = false
