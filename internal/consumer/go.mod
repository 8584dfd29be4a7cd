module github.com/fixedwindow/ratelimit/internal/consumer

go 1.25.0

replace github.com/fixedwindow/ratelimit => ../..

require (
	github.com/dunglas/httpsfv v1.1.2
	github.com/fixedwindow/ratelimit v0.0.0-00010101000000-000000000000
)
