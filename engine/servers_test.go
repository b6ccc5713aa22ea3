package engine

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Loopback servers for the remote channels' tests (remote_failure_test.go);
// the webhook kind's tests have their own (engine/kinds/invokewebhook).

// rawServer answers every connection on loopback with answer, which gets
// the connection once the request's head is read.
func rawServer(t *testing.T, answer func(c *net.TCPConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				answer(c.(*net.TCPConn))
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/hook"
}

func handlerServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = nil
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}
