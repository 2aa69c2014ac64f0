package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestGreeting(t *testing.T) {
	if got := Greeting("berth"); got != "Hello from Berth" {
		t.Fatalf("Greeting = %q", got)
	}
}

// The server answers over localhost: the name resolves inside the workspace as on a normal machine.
func TestServeOverLocalhost(t *testing.T) {
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(handler)}
	go srv.Serve(l)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	resp, err := http.Get("http://localhost:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if strings.TrimSpace(string(body)) != "Hello from Berth" {
		t.Fatalf("body = %q", body)
	}
}
