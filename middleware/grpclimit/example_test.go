package grpclimit_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// ExampleNew limits a server's calls to 2 a minute per client address.
// The interceptor is called here as grpc calls it, with a call from
// 203.0.113.7, to show the answers: two admissions, then
// RESOURCE_EXHAUSTED with the wait until the window turns.
func ExampleNew() {
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(2)))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	ic, err := grpclimit.New(l) // keyed by the peer's address
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(ic.Unary()),
		grpc.ChainStreamInterceptor(ic.Stream()),
	)
	defer srv.Stop()
	// Register services on srv and Serve as usual.

	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 52139}})
	info := &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"}
	handler := func(context.Context, any) (any, error) { return "served", nil }
	for range 3 {
		_, err := ic.Unary()(ctx, nil, info, handler)
		fmt.Println(status.Code(err))
	}
	// Output:
	// OK
	// OK
	// ResourceExhausted
}
