//go:build linux

// Command davbench measures Ontoflow's WebDAV handler against Apache 2.4
// mod_dav_fs on the same machine, in one run, with the same client code
// (issue 3's benchmark targets).
//
//	davbench serve --root DIR [--db FILE] [--addr 127.0.0.1:8092] [--cpuprofile FILE]
//	davbench run [--workdir /tmp/davbench] [--only propfind,mem,get,put,small] ...
//
// serve runs the WebDAV handler over SQLite in its own process so that its
// memory can be read from /proc separately from the load generator's; run
// starts Apache (scripts/apache-webdav.sh) and a serve child of itself,
// populates both trees identically, drives them and prints a Markdown table.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(ctx, os.Args[2:])
	case "run":
		err = run(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		slog.Error("davbench "+os.Args[1], "err", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  davbench serve --root DIR [--db FILE] [--addr HOST:PORT] [--user U --password P] [--cpuprofile FILE] [--log FILE]
  davbench run [--workdir DIR] [--only LIST] [--runs N] [--rounds N] [--cpuprofile FILE] [--out FILE]
run -h / serve -h list every flag.`)
	os.Exit(2)
}
