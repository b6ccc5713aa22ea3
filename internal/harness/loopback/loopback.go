// Package loopback holds the test servers that outbound calls (webhooks,
// Slack, Teams) are tried against: on 127.0.0.1 only, so a test never
// sends anywhere else.
package loopback

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// RawServer answers every connection on loopback with answer, which gets
// the connection once the request's head is read — for answers no
// http.Handler can give (a reset, a stall, a malformed response). It
// returns the URL of its /hook path.
func RawServer(t testing.TB, answer func(c *net.TCPConn)) string {
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

// HandlerServer serves h on loopback until the test ends.
func HandlerServer(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = nil
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}
