module github.com/fixedwindow/ratelimit/limiter/redisstore/miniredistest

go 1.25.0

replace github.com/fixedwindow/ratelimit => ../../..

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/fixedwindow/ratelimit v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.19.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
)
