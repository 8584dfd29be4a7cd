// Package sideeffects holds the tests that keep importing this module's
// library packages free of side effects (STYLE.md rule 14): no
// net/http/pprof or expvar among their dependencies, no handler on
// http.DefaultServeMux. It has no other code.
package sideeffects
