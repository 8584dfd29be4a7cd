package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
)

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestServeRedisAwayExits: serve with --store redis where no Redis
// answers does not start: one line names the address and the cause, and
// the exit code is 1.
func TestServeRedisAwayExits(t *testing.T) {
	addr := closedAddr(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--store", "redis", "--redis-addr", addr, "--addr", "127.0.0.1:0"}, &stdout, &stderr)
	msg := stderr.String()
	want := "lab serve: --redis-addr " + addr + ": no Redis answers there: dial tcp " + addr + ": "
	if code != 1 || strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, want) || !strings.Contains(msg, "connection refused") {
		t.Errorf("serve --store redis --redis-addr %s: exit %d, stderr %q; want exit 1 and one line starting %q, ending in connection refused", addr, code, msg, want)
	}
	if strings.Contains(msg, "listening") {
		t.Errorf("stderr %q: the server started", msg)
	}
}

// TestCheckRedisNotRedis: a listener that is not Redis (it hangs up at
// once) fails the PING, and the error says so.
func TestCheckRedisNotRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	err = checkRedis(context.Background(), ln.Addr().String())
	want := "--redis-addr " + ln.Addr().String() + ": Redis does not answer PING: "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("checkRedis(%s): got %v, want an error starting %q", ln.Addr(), err, want)
	}
	ln.Close()
	<-done
}
