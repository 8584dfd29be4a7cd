module github.com/fixedwindow/ratelimit/example/plans

go 1.25.0

// The modules of this repository are developed together; go.work joins
// them too.
replace (
	github.com/fixedwindow/ratelimit => ../..
	github.com/fixedwindow/ratelimit/middleware/grpclimit => ../../middleware/grpclimit
)

require (
	github.com/fixedwindow/ratelimit v0.0.0-00010101000000-000000000000
	github.com/fixedwindow/ratelimit/middleware/grpclimit v0.0.0-00010101000000-000000000000
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/go-chi/chi/v5 v5.4.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260706201446-f0a921348800 // indirect
)
