// Broker embeds an engine and serves it to remote producers and consumers
// over gRPC until interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "equeue-remote-broker"), "engine directory")
	listen := flag.String("listen", "127.0.0.1:7654", "address to serve on")
	flag.Parse()

	// Take the port first: a busy one fails before the engine is opened.
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dir, lis); err != nil {
		log.Fatal(err)
	}
	log.Print("broker stopped cleanly")
}

// run serves the engine in dir on lis until ctx ends, then stops the
// server gracefully and closes the engine. It reports a failed Close as
// its error too.
func run(ctx context.Context, dir string, lis net.Listener) (err error) {
	eng, err := equeue.Open(dir, nil)
	if err != nil {
		return errors.Join(err, lis.Close())
	}
	defer func() { err = errors.Join(err, eng.Close()) }()
	if err := eng.CreateTopic(ctx, "jobs", 4); err != nil && !errors.Is(err, equeue.ErrTopicExists) {
		return errors.Join(err, lis.Close())
	}
	srv, err := remote.NewServer(eng, nil) // add TLS and Tokens for anything beyond loopback
	if err != nil {
		return errors.Join(err, lis.Close())
	}
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		srv.GracefulStop()
	}()
	log.Printf("broker serving %s on %s", dir, lis.Addr())
	err = srv.Serve(lis)
	// Serve returns when GracefulStop begins (or when it failed): wait for
	// the calls in progress to end before the engine closes.
	cancel()
	<-stopped
	return err
}
