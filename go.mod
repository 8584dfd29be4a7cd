module github.com/fixedwindow/ratelimit

go 1.25.0

require (
	github.com/go-chi/chi/v5 v5.4.0
	github.com/redis/go-redis/v9 v9.19.0
	github.com/sony/gobreaker/v2 v2.4.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
)
