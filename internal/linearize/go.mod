module github.com/fixedwindow/ratelimit/internal/linearize

go 1.25.0

// The root module is developed beside this one; go.work joins them too.
// Being under the root's path, this module may import its internal
// packages (internal/redistest).
replace github.com/fixedwindow/ratelimit => ../..

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/fixedwindow/ratelimit v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.19.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
