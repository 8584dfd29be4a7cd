module github.com/fixedwindow/ratelimit/middleware/grpclimit

go 1.25.0

// The root module is developed beside this one; go.work joins them too.
replace github.com/fixedwindow/ratelimit => ../..

require (
	github.com/fixedwindow/ratelimit v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.19.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260706201446-f0a921348800
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-chi/chi/v5 v5.4.0 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
)
