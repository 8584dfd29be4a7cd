// Package redistest runs real Redis servers for tests: the shared one at
// 127.0.0.1:6379, throwaway redis-server processes on free loopback ports,
// a three-master Redis Cluster, a TCP proxy that delays traffic, and a
// RESP proxy that refuses script calls declaring no key (KeyProxy). Every
// process and listener it starts is stopped by t.Cleanup. There is no fake:
// a test that needs Redis and finds none fails (under CI=true and
// elsewhere), it never skips.
//
//	func TestSomething(t *testing.T) {
//		srv := redistest.StartServer(t)
//		c := redistest.Client(t, srv.Addr())
//		srv.Kill()    // the client now sees connection errors
//		srv.Restart() // same port, empty data
//		_ = c
//	}
package redistest
